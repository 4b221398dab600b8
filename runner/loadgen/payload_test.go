package loadgen

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/xp-bench/xp/internal/golden"
)

// descriptorSet builds the FileDescriptorSet of schema/record.proto (protoc
// is not needed to regenerate it).
func descriptorSet(t *testing.T) []byte {
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	field := func(name string, n int32) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(n), Type: str, Label: opt, JsonName: proto.String(name)}
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("record.proto"),
		Package: proto.String("xp"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name:  proto.String("Record"),
			Field: []*descriptorpb.FieldDescriptorProto{field("id", 1), field("status", 2), field("ssn", 3), field("notes", 4)},
		}},
	}
	if _, err := protodesc.NewFile(fd, nil); err != nil {
		t.Fatal(err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDescriptorSet(t *testing.T) {
	golden.CheckFile(t, "schema/record.pb", descriptorSet(t))
}

func recordDescriptor(t *testing.T) protoreflect.MessageDescriptor {
	b, err := Schema.ReadFile("schema/record.pb")
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("xp.Record")
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MessageDescriptor)
}

type decoded struct {
	ID     string `json:"id" avro:"id"`
	Status string `json:"status" avro:"status"`
	SSN    string `json:"ssn" avro:"ssn"`
	Notes  string `json:"notes" avro:"notes"`
}

// TestPayloadsDecodeWithIndependentReaders encodes records of several
// sizes and decodes each with encoding/json, hamba/avro (shipped schema)
// and dynamicpb (shipped descriptor set); sizes are within 1%.
func TestPayloadsDecodeWithIndependentReaders(t *testing.T) {
	avsc, err := Schema.ReadFile("schema/record.avsc")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := avro.Parse(string(avsc))
	if err != nil {
		t.Fatal(err)
	}
	md := recordDescriptor(t)
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ssnRE := regexp.MustCompile(`^\d{3}-\d{2}-\d{4}$`)
	decoders := map[string]func(b []byte) (decoded, error){
		EncodingJSON: func(b []byte) (d decoded, err error) { err = json.Unmarshal(b, &d); return },
		EncodingAvro: func(b []byte) (d decoded, err error) { err = avro.Unmarshal(schema, b, &d); return },
		EncodingProtobuf: func(b []byte) (d decoded, err error) {
			m := dynamicpb.NewMessage(md)
			if err = proto.Unmarshal(b, m); err != nil {
				return
			}
			get := func(n string) string { return m.Get(md.Fields().ByName(protoreflect.Name(n))).String() }
			return decoded{get("id"), get("status"), get("ssn"), get("notes")}, nil
		},
	}
	for enc, dec := range decoders {
		for _, size := range []int{128, 200, 1024, 4096, 65536} {
			p, err := newEncoder(enc, size)
			if err != nil {
				t.Fatalf("%s/%d: %v", enc, size, err)
			}
			p.fill(7)
			rng := rand.New(rand.NewPCG(1, 2))
			var buf []byte
			for range 50 {
				v, dig := p.next(rng, buf)
				buf = v
				if dig != Digest(nil, v) {
					t.Fatalf("%s/%d: digest mismatch", enc, size)
				}
				if d := len(v) - size; d > 0 || float64(-d) > 0.01*float64(size) {
					t.Fatalf("%s/%d: encoded %d bytes, want within 1%% of %d", enc, size, len(v), size)
				}
				got, err := dec(v)
				if err != nil {
					t.Fatalf("%s/%d: decode: %v", enc, size, err)
				}
				if !uuidRE.MatchString(got.ID) || !ssnRE.MatchString(got.SSN) || len(got.Status) != statusLen || got.Notes == "" {
					t.Fatalf("%s/%d: bad record %+v", enc, size, got)
				}
			}
		}
	}
}

func TestPayloadErrors(t *testing.T) {
	cases := []struct {
		enc  string
		size int
	}{{"xml", 1024}, {EncodingJSON, 50}, {EncodingAvro, 30}, {EncodingProtobuf, 40}}
	for _, tc := range cases {
		if _, err := newEncoder(tc.enc, tc.size); err == nil {
			t.Errorf("%s/%d accepted", tc.enc, tc.size)
		}
	}
}

// TestBytesPayloadsSeededAndIncompressible: same seed, same bytes; values
// differ from each other.
func TestBytesPayloadsSeeded(t *testing.T) {
	a, _ := newEncoder(EncodingBytes, 1024)
	b, _ := newEncoder(EncodingBytes, 1024)
	c, _ := newEncoder(EncodingBytes, 1024)
	a.fill(1)
	b.fill(1)
	c.fill(2)
	if !bytes.Equal(a.pool[0], b.pool[0]) {
		t.Fatal("same seed, different payloads")
	}
	if bytes.Equal(a.pool[0], c.pool[0]) || bytes.Equal(a.pool[0], a.pool[1]) {
		t.Fatal("payloads repeat")
	}
}

// TestDigestFormat pins the documented digest: CRC-32C and CRC-32/IEEE of
// key then value, against the two CRCs' published check values for
// "123456789" (0xE3069283 and 0xCBF43926), split across key and value.
func TestDigestFormat(t *testing.T) {
	const want = 0xE3069283_CBF43926
	for _, c := range []struct{ key, value string }{{"", "123456789"}, {"1234", "56789"}, {"123456789", ""}} {
		if got := Digest([]byte(c.key), []byte(c.value)); got != want {
			t.Errorf("Digest(%q, %q) = %#x, want %#x", c.key, c.value, got, uint64(want))
		}
	}
	if Digest(nil, []byte("123456789")) == Digest(nil, []byte("123456788")) {
		t.Error("digest does not see a changed byte")
	}
}
