package fields

import (
	"encoding/base64"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// Protobuf splices top-level fields of a Protobuf message in wire format.
// Each occurrence of a named field (tag and payload, whatever its wire
// type) is sealed whole and replaced by a length-delimited field of the
// same number holding the envelope; decryption puts the original bytes
// back. Unknown and other fields are copied. For a field declared string
// the envelope is written as its standard base64, so that a reader
// decoding the ciphertext with the schema still finds valid UTF-8.
type Protobuf struct {
	message string
	numbers map[string]protowire.Number
	strings map[string]bool
}

var _ Codec = (*Protobuf)(nil)

// NewProtobuf builds a codec for message (full name, e.g. "xp.Record"; ""
// when the descriptor set holds exactly one message) from a serialized
// FileDescriptorSet (protoc --descriptor_set_out, --include_imports).
func NewProtobuf(descriptorSet []byte, message string) (*Protobuf, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptorSet, &set); err != nil {
		return nil, fmt.Errorf("protobuf descriptor set: %w", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("protobuf descriptor set: %w", err)
	}
	var md protoreflect.MessageDescriptor
	if message == "" {
		var names []string
		files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
			for i := 0; i < f.Messages().Len(); i++ {
				md = f.Messages().Get(i)
				names = append(names, string(md.FullName()))
			}
			return true
		})
		if len(names) != 1 {
			return nil, fmt.Errorf("protobuf descriptor set holds messages %v: name the one to use", names)
		}
	} else {
		d, err := files.FindDescriptorByName(protoreflect.FullName(message))
		if err != nil {
			return nil, fmt.Errorf("protobuf message %q not in the descriptor set", message)
		}
		var ok bool
		if md, ok = d.(protoreflect.MessageDescriptor); !ok {
			return nil, fmt.Errorf("protobuf %q is not a message", message)
		}
	}
	p := &Protobuf{message: string(md.FullName()), numbers: map[string]protowire.Number{}, strings: map[string]bool{}}
	for i := 0; i < md.Fields().Len(); i++ {
		f := md.Fields().Get(i)
		p.numbers[string(f.Name())] = f.Number()
		p.strings[string(f.Name())] = f.Kind() == protoreflect.StringKind
	}
	return p, nil
}

// Message is the full name of the message the codec walks.
func (p *Protobuf) Message() string { return p.message }

// CheckFields reports a field that the message does not have.
func (p *Protobuf) CheckFields(fields []string) error {
	for _, f := range fields {
		if _, ok := p.numbers[f]; !ok {
			return fmt.Errorf("field %q is not in protobuf message %s", f, p.message)
		}
	}
	return nil
}

// plan returns the number of each named field (0, never a field number,
// if unknown) and whether it is declared string, remembered in sc for the
// next record with the same fields (map lookups per record cost more than
// the walk of a small message).
func (p *Protobuf) plan(fields []string, sc *Scratch) ([]protowire.Number, []bool) {
	if sc.pb == p && slices.Equal(sc.pbFields, fields) {
		return sc.pbNums, sc.pbStrings
	}
	sc.pbNums, sc.pbStrings = sc.pbNums[:0], sc.pbStrings[:0]
	for _, f := range fields {
		sc.pbNums = append(sc.pbNums, p.numbers[f])
		sc.pbStrings = append(sc.pbStrings, p.strings[f])
	}
	sc.pb, sc.pbFields = p, append(sc.pbFields[:0], fields...)
	return sc.pbNums, sc.pbStrings
}

// locate fills sc.spans with every occurrence (tag included) of a named
// field.
func (p *Protobuf) locate(value []byte, fields []string, sc *Scratch) error {
	sc.spans = sc.spans[:0]
	ns, _ := p.plan(fields, sc)
	for i := 0; i < len(value); {
		num, typ, n := protowire.ConsumeTag(value[i:])
		if n < 0 {
			return ErrMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, value[i+n:])
		if m < 0 {
			return ErrMalformed
		}
		for k, want := range ns {
			if num == want {
				sc.spans = append(sc.spans, span{start: i, end: i + n + m, field: k, aux: n})
				break
			}
		}
		i += n + m
	}
	return nil
}

// Encrypt implements Codec.
func (p *Protobuf) Encrypt(dst, value []byte, fields []string, s *envelope.Sealer, sc *Scratch) ([]byte, []string, error) {
	if err := p.locate(value, fields, sc); err != nil {
		return dst, nil, err
	}
	if len(sc.spans) == 0 {
		return dst, nil, nil
	}
	nums, isString := p.plan(fields, sc)
	start, prev := len(dst), 0
	for _, sp := range sc.spans {
		dst = append(dst, value[prev:sp.start]...)
		var err error
		if sc.env, err = s.Seal(sc.env[:0], fields[sp.field], value[sp.start:sp.end]); err != nil {
			return dst[:start], nil, err
		}
		dst = protowire.AppendTag(dst, nums[sp.field], protowire.BytesType)
		if isString[sp.field] {
			dst = protowire.AppendVarint(dst, uint64(base64.StdEncoding.EncodedLen(len(sc.env))))
			dst = sc.b64.appendEncode(dst, sc.env)
		} else {
			dst = protowire.AppendBytes(dst, sc.env)
		}
		prev = sp.end
	}
	return append(dst, value[prev:]...), sc.foundNames(fields), nil
}

// Decrypt implements Codec.
func (p *Protobuf) Decrypt(dst, value []byte, fields []string, topic string, o *envelope.Opener, sc *Scratch) ([]byte, error) {
	if err := p.locate(value, fields, sc); err != nil {
		return dst, err
	}
	if len(sc.foundNames(fields)) != len(fields) {
		return dst, ErrFieldType
	}
	nums, isString := p.plan(fields, sc)
	start, prev := len(dst), 0
	for _, sp := range sc.spans {
		tagLen := sp.aux
		if _, typ, _ := protowire.ConsumeTag(value[sp.start:]); typ != protowire.BytesType {
			return dst[:start], ErrFieldType
		}
		env, n := protowire.ConsumeBytes(value[sp.start+tagLen : sp.end])
		if n < 0 {
			return dst[:start], ErrMalformed
		}
		if isString[sp.field] {
			var err error
			if sc.env, err = sc.b64.appendDecode(sc.env[:0], env); err != nil {
				return dst[:start], ErrFieldType
			}
			env = sc.env
		}
		dst = append(dst, value[prev:sp.start]...)
		at := len(dst)
		var err error
		if dst, err = o.Open(dst, topic, fields[sp.field], env); err != nil {
			return dst[:start], err
		}
		// The plaintext is the original field: it must carry the same
		// number, or the envelope was planted under another one.
		if num, _, n := protowire.ConsumeTag(dst[at:]); n < 0 || num != nums[sp.field] {
			return dst[:start], ErrFieldType
		}
		prev = sp.end
	}
	return append(dst, value[prev:]...), nil
}
