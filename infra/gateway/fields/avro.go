package fields

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"os"
	"slices"

	"github.com/hamba/avro/v2"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// Avro splices top-level fields of Avro binary records. With Confluent
// framing (magic byte 0, 4-byte big-endian schema id) the id picks the
// schema and the 5 framing bytes are copied; without it every value is
// written with the one schema given. A named field must be string or bytes
// or a union with a string or bytes branch; a bytes field carries the
// envelope, a string field its standard base64 (Avro strings are UTF-8).
// A union field on another branch (null, say) is absent, not encrypted.
type Avro struct {
	confluent bool
	single    *avroRecord
	byID      map[uint32]*avroRecord
}

var _ Codec = (*Avro)(nil)

type avroKind uint8

const (
	avNull avroKind = iota
	avBool
	avVarint // int, long, enum
	avFloat
	avDouble
	avBytes // bytes, string
	avFixed
	avRecord
	avArray
	avMap
	avUnion
)

type avroNode struct {
	kind     avroKind
	isString bool
	size     int         // fixed
	children []*avroNode // record fields, union branches, array/map item
}

var mapKey = &avroNode{kind: avBytes, isString: true}

type avroRecord struct {
	node  *avroNode
	index map[string]int // field name → position
}

// NewAvro builds a codec for unframed Avro values of the record schema
// (JSON schema text).
func NewAvro(schema []byte) (*Avro, error) {
	r, err := compileAvro(schema)
	if err != nil {
		return nil, err
	}
	return &Avro{single: r}, nil
}

// NewAvroConfluent builds a codec for Confluent-framed values; schemas maps
// schema ids to schema text.
func NewAvroConfluent(schemas map[uint32][]byte) (*Avro, error) {
	a := &Avro{confluent: true, byID: map[uint32]*avroRecord{}}
	for id, s := range schemas {
		r, err := compileAvro(s)
		if err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		a.byID[id] = r
	}
	return a, nil
}

// ReadAvroSchema reads and compiles a schema file, for configuration
// checks; errors name the file.
func ReadAvroSchema(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if _, err := compileAvro(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// CheckFields reports a field that is missing from a schema or cannot
// carry an envelope.
func (a *Avro) CheckFields(fields []string) error {
	check := func(r *avroRecord, where string) error {
		for _, f := range fields {
			i, ok := r.index[f]
			if !ok {
				return fmt.Errorf("%sfield %q is not in the Avro schema", where, f)
			}
			n := r.node.children[i]
			if n.kind == avBytes {
				continue
			}
			ok = false
			if n.kind == avUnion {
				for _, b := range n.children {
					ok = ok || b.kind == avBytes
				}
			}
			if !ok {
				return fmt.Errorf("%sfield %q must be string or bytes (or a union with one) to carry an envelope", where, f)
			}
		}
		return nil
	}
	if a.single != nil {
		return check(a.single, "")
	}
	for id, r := range a.byID {
		if err := check(r, fmt.Sprintf("schema id %d: ", id)); err != nil {
			return err
		}
	}
	return nil
}

func compileAvro(text []byte) (*avroRecord, error) {
	s, err := avro.ParseBytesWithCache(text, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("avro schema: %w", err)
	}
	if s.Type() != avro.Record {
		return nil, fmt.Errorf("avro schema: top level is %s, want a record", s.Type())
	}
	memo := map[string]*avroNode{}
	n, err := compileNode(s, memo)
	if err != nil {
		return nil, err
	}
	r := &avroRecord{node: n, index: map[string]int{}}
	for i, f := range s.(*avro.RecordSchema).Fields() {
		r.index[f.Name()] = i
	}
	return r, nil
}

func compileNode(s avro.Schema, memo map[string]*avroNode) (*avroNode, error) {
	switch s.Type() {
	case avro.Null:
		return &avroNode{kind: avNull}, nil
	case avro.Boolean:
		return &avroNode{kind: avBool}, nil
	case avro.Int, avro.Long, avro.Enum:
		return &avroNode{kind: avVarint}, nil
	case avro.Float:
		return &avroNode{kind: avFloat}, nil
	case avro.Double:
		return &avroNode{kind: avDouble}, nil
	case avro.String:
		return &avroNode{kind: avBytes, isString: true}, nil
	case avro.Bytes:
		return &avroNode{kind: avBytes}, nil
	case avro.Fixed:
		return &avroNode{kind: avFixed, size: s.(*avro.FixedSchema).Size()}, nil
	case avro.Ref:
		return compileNode(s.(*avro.RefSchema).Schema(), memo)
	case avro.Record, avro.Error:
		rs := s.(*avro.RecordSchema)
		if n, ok := memo[rs.FullName()]; ok {
			return n, nil
		}
		n := &avroNode{kind: avRecord}
		memo[rs.FullName()] = n
		for _, f := range rs.Fields() {
			c, err := compileNode(f.Type(), memo)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	case avro.Array:
		c, err := compileNode(s.(*avro.ArraySchema).Items(), memo)
		return &avroNode{kind: avArray, children: []*avroNode{c}}, err
	case avro.Map:
		c, err := compileNode(s.(*avro.MapSchema).Values(), memo)
		return &avroNode{kind: avMap, children: []*avroNode{c}}, err
	case avro.Union:
		n := &avroNode{kind: avUnion}
		for _, b := range s.(*avro.UnionSchema).Types() {
			c, err := compileNode(b, memo)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	}
	return nil, fmt.Errorf("avro schema: unsupported type %s", s.Type())
}

func readLong(v []byte, i int) (int64, int, error) {
	x, n := binary.Varint(v[min(i, len(v)):])
	if n <= 0 {
		return 0, 0, ErrMalformed
	}
	return x, i + n, nil
}

// skipAvro returns the offset just past the datum of n at v[i].
func skipAvro(v []byte, i int, n *avroNode, depth int) (int, error) {
	if depth > 64 {
		return 0, ErrMalformed
	}
	switch n.kind {
	case avNull:
		return i, nil
	case avBool:
		i++
	case avVarint:
		_, j, err := readLong(v, i)
		return j, err
	case avFloat:
		i += 4
	case avDouble:
		i += 8
	case avFixed:
		i += n.size
	case avBytes:
		l, j, err := readLong(v, i)
		if err != nil || l < 0 || l > int64(len(v)-j) {
			return 0, ErrMalformed
		}
		return j + int(l), nil
	case avRecord:
		for _, c := range n.children {
			var err error
			if i, err = skipAvro(v, i, c, depth+1); err != nil {
				return 0, err
			}
		}
	case avUnion:
		b, j, err := readLong(v, i)
		if err != nil || b < 0 || b >= int64(len(n.children)) {
			return 0, ErrMalformed
		}
		return skipAvro(v, j, n.children[b], depth+1)
	case avArray, avMap:
		for {
			count, j, err := readLong(v, i)
			if err != nil {
				return 0, err
			}
			i = j
			if count == 0 {
				break
			}
			if count < 0 {
				// A block with its byte size: skip it whole.
				size, j, err := readLong(v, i)
				if err != nil || size < 0 || size > int64(len(v)-j) {
					return 0, ErrMalformed
				}
				i = j + int(size)
				continue
			}
			if count > int64(len(v)-i) && !(n.kind == avArray && n.children[0].kind == avNull) {
				return 0, ErrMalformed
			}
			if n.kind == avArray && n.children[0].kind == avNull {
				continue
			}
			for range count {
				if n.kind == avMap {
					if i, err = skipAvro(v, i, mapKey, depth+1); err != nil {
						return 0, err
					}
				}
				if i, err = skipAvro(v, i, n.children[0], depth+1); err != nil {
					return 0, err
				}
			}
		}
	}
	if i > len(v) {
		return 0, ErrMalformed
	}
	return i, nil
}

// avroPlan returns, for each field position of r up to the last named
// one, the index in fields of the field there or -1; cached per schema and
// field list.
func (sc *Scratch) avroPlan(r *avroRecord, fields []string) []int {
	if sc.planRec == r && slices.Equal(sc.planFields, fields) {
		return sc.plan
	}
	last := -1
	for _, f := range fields {
		if i, ok := r.index[f]; ok && i > last {
			last = i
		}
	}
	sc.plan = sc.plan[:0]
	for range last + 1 {
		sc.plan = append(sc.plan, -1)
	}
	for k, f := range fields {
		if i, ok := r.index[f]; ok && sc.plan[i] < 0 {
			sc.plan[i] = k
		}
	}
	sc.planRec, sc.planFields = r, append(sc.planFields[:0], fields...)
	return sc.plan
}

// locate fills sc.spans with the content (after the length) of each named
// field holding a string or bytes datum; aux is 1 for string.
func (a *Avro) locate(value []byte, fields []string, sc *Scratch) (int, error) {
	r, body := a.single, 0
	if a.confluent {
		if len(value) < 5 || value[0] != 0 {
			return 0, fmt.Errorf("%w: no Confluent framing (magic byte 0, schema id)", ErrMalformed)
		}
		id := binary.BigEndian.Uint32(value[1:])
		if r = a.byID[id]; r == nil {
			return 0, fmt.Errorf("%w: schema id %d not configured", ErrMalformed, id)
		}
		body = 5
	}
	sc.spans = sc.spans[:0]
	plan := sc.avroPlan(r, fields)
	i := body
	for pos, fi := range plan {
		n := r.node.children[pos]
		if fi < 0 {
			var err error
			if i, err = skipAvro(value, i, n, 0); err != nil {
				return 0, err
			}
			continue
		}
		if n.kind == avUnion {
			b, j, err := readLong(value, i)
			if err != nil || b < 0 || b >= int64(len(n.children)) {
				return 0, ErrMalformed
			}
			i = j
			if n = n.children[b]; n.kind != avBytes {
				if i, err = skipAvro(value, i, n, 0); err != nil {
					return 0, err
				}
				continue
			}
		} else if n.kind != avBytes {
			return 0, ErrFieldType
		}
		l, j, err := readLong(value, i)
		if err != nil || l < 0 || l > int64(len(value)-j) {
			return 0, ErrMalformed
		}
		aux := 0
		if n.isString {
			aux = 1
		}
		sc.spans = append(sc.spans, span{start: i, end: j + int(l), field: fi, aux: aux})
		i = j + int(l)
	}
	return i, nil
}

// Encrypt implements Codec.
func (a *Avro) Encrypt(dst, value []byte, fields []string, s *envelope.Sealer, sc *Scratch) ([]byte, []string, error) {
	if _, err := a.locate(value, fields, sc); err != nil {
		return dst, nil, err
	}
	if len(sc.spans) == 0 {
		return dst, nil, nil
	}
	start, prev := len(dst), 0
	for _, sp := range sc.spans {
		dst = append(dst, value[prev:sp.start]...)
		var err error
		if sc.env, err = s.Seal(sc.env[:0], fields[sp.field], value[sp.start:sp.end]); err != nil {
			return dst[:start], nil, err
		}
		if sp.aux == 1 {
			dst = binary.AppendVarint(dst, int64(base64.StdEncoding.EncodedLen(len(sc.env))))
			dst = sc.b64.appendEncode(dst, sc.env)
		} else {
			dst = binary.AppendVarint(dst, int64(len(sc.env)))
			dst = append(dst, sc.env...)
		}
		prev = sp.end
	}
	return append(dst, value[prev:]...), sc.foundNames(fields), nil
}

// Decrypt implements Codec.
func (a *Avro) Decrypt(dst, value []byte, fields []string, topic string, o *envelope.Opener, sc *Scratch) ([]byte, error) {
	if _, err := a.locate(value, fields, sc); err != nil {
		return dst, err
	}
	if len(sc.foundNames(fields)) != len(fields) {
		return dst, ErrFieldType
	}
	start, prev := len(dst), 0
	for _, sp := range sc.spans {
		_, c, _ := readLong(value, sp.start)
		env := value[c:sp.end]
		if sp.aux == 1 {
			var err error
			if sc.env, err = sc.b64.appendDecode(sc.env[:0], env); err != nil {
				return dst[:start], ErrFieldType
			}
			env = sc.env
		}
		var err error
		if sc.plain, err = o.Open(sc.plain[:0], topic, fields[sp.field], env); err != nil {
			return dst[:start], err
		}
		dst = append(dst, value[prev:sp.start]...)
		dst = append(dst, sc.plain...)
		prev = sp.end
	}
	return append(dst, value[prev:]...), nil
}
