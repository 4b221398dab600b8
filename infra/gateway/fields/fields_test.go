package fields

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// The load generator's shipped schemas: the payload these codecs exist for.
const (
	loadgenAvro  = "../../../runner/loadgen/schema/record.avsc"
	loadgenProto = "../../../runner/loadgen/schema/record.pb"
)

func keyring(t testing.TB) *envelope.Keyring {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kek")
	if err := envelope.AddKey(path, "k1"); err != nil {
		t.Fatal(err)
	}
	v, err := envelope.OpenVault(path)
	if err != nil {
		t.Fatal(err)
	}
	return envelope.NewKeyring(v, envelope.Options{})
}

// roundTrip encrypts and decrypts value and checks the result is
// byte-identical; it returns the ciphertext value.
func roundTrip(t *testing.T, k *envelope.Keyring, c Codec, value []byte, fields []string, wantFound int) []byte {
	t.Helper()
	var sc Scratch
	enc, found, err := c.Encrypt([]byte("pre"), value, fields, k.Sealer("topic"), &sc)
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	if len(found) != wantFound {
		t.Fatalf("found %v, want %d fields", found, wantFound)
	}
	if string(enc[:3]) != "pre" {
		t.Fatal("encrypt did not append to dst")
	}
	enc = enc[3:]
	if wantFound == 0 {
		if len(enc) != 0 {
			t.Fatal("nothing found but output written")
		}
		return value
	}
	dec, err := c.Decrypt([]byte("pre"), enc, found, "topic", k.Opener(), &sc)
	if err != nil {
		t.Fatalf("decrypt: %v", err)
	}
	if !bytes.Equal(dec[3:], value) {
		t.Fatalf("round trip differs:\n got %q\nwant %q", dec[3:], value)
	}
	return enc
}

func isEnvelope(t *testing.T, env []byte) {
	t.Helper()
	if _, err := envelope.HeaderLen(env); err != nil {
		t.Fatalf("not an envelope (%v): %x", err, env)
	}
}

func TestJSON(t *testing.T) {
	k := keyring(t)
	for _, tc := range []struct {
		name      string
		value     string
		fields    []string
		wantFound int
	}{
		{"loadgen record", `{"id":"6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e","status":"ACTIVE","ssn":"123-45-6789","notes":"abc"}`, []string{"ssn"}, 1},
		{"whitespace everywhere", " {\n \"ssn\" :\t\"1\" , \"b\" : [1, {\"ssn\": 2}] }\n", []string{"ssn"}, 1},
		{"number value", `{"ssn":123456789,"x":1}`, []string{"ssn"}, 1},
		{"object value", `{"a":"}{\"","ssn":{"n":[1,2,"]"]}}`, []string{"ssn"}, 1},
		{"null value", `{"ssn":null}`, []string{"ssn"}, 1},
		{"escapes before and in the field", `{"a":"x\"y\\","ssn":"a\"b\\"}`, []string{"ssn"}, 1},
		{"escaped key matches", `{"s\u0073n":"1"}`, []string{"ssn"}, 1},
		{"nested ssn is not top level", `{"a":{"ssn":"1"}}`, []string{"ssn"}, 0},
		{"absent", `{"a":1}`, []string{"ssn"}, 0},
		{"empty object", `{}`, []string{"ssn"}, 0},
		{"two fields", `{"email":"a@b","ssn":"1","z":true}`, []string{"ssn", "email"}, 2},
		{"duplicate key: both encrypted", `{"ssn":"1","ssn":"2"}`, []string{"ssn"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTrip(t, k, JSON{}, []byte(tc.value), tc.fields, tc.wantFound)
			if tc.wantFound == 0 {
				return
			}
			if !json.Valid(enc) {
				t.Fatalf("ciphertext value is not JSON: %s", enc)
			}
			// Every other key's raw value is byte-identical; each named
			// one is a base64 string of an envelope.
			var before, after map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.value), &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(enc, &after); err != nil {
				t.Fatal(err)
			}
			for key, raw := range before {
				named := false
				for _, f := range tc.fields {
					named = named || f == key
				}
				if !named {
					if !bytes.Equal(after[key], raw) {
						t.Fatalf("field %q changed: %s → %s", key, raw, after[key])
					}
					continue
				}
				var s string
				if err := json.Unmarshal(after[key], &s); err != nil {
					t.Fatalf("field %q is not a string: %s", key, after[key])
				}
				env, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					t.Fatal(err)
				}
				isEnvelope(t, env)
			}
		})
	}
}

func TestJSONErrors(t *testing.T) {
	k := keyring(t)
	var sc Scratch
	good, _, err := JSON{}.Encrypt(nil, []byte(`{"ssn":"1","n":2}`), []string{"ssn"}, k.Sealer("topic"), &sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, value string
		fields      []string
		topic       string
		decrypt     bool
		want        error
	}{
		{"not an object", `[1]`, []string{"ssn"}, "topic", false, ErrMalformed},
		{"unterminated string", `{"ssn":"1}`, []string{"ssn"}, "topic", false, ErrMalformed},
		{"missing colon", `{"ssn" "1"}`, []string{"ssn"}, "topic", false, ErrMalformed},
		{"trailing garbage", `{"ssn":"1"}x`, []string{"ssn"}, "topic", false, ErrMalformed},
		{"unbalanced", `{"ssn":[1,2}`, []string{"ssn"}, "topic", false, ErrMalformed},
		{"empty", ``, []string{"ssn"}, "topic", false, ErrMalformed},
		{"decrypt: wrong topic", string(good), []string{"ssn"}, "other", true, envelope.ErrAuth},
		{"decrypt: field not encrypted", `{"ssn":"MTIz","n":2}`, []string{"ssn"}, "topic", true, envelope.ErrMalformed},
		{"decrypt: field not a string", `{"ssn":1}`, []string{"ssn"}, "topic", true, ErrFieldType},
		{"decrypt: field missing", `{"n":2}`, []string{"ssn"}, "topic", true, ErrFieldType},
		{"decrypt: not base64", `{"ssn":"***"}`, []string{"ssn"}, "topic", true, ErrFieldType},
		{"decrypt: moved to another field", strings.Replace(string(good), `"ssn"`, `"tax"`, 1), []string{"tax"}, "topic", true, envelope.ErrAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			var out []byte
			if tc.decrypt {
				out, err = JSON{}.Decrypt([]byte("keep"), []byte(tc.value), tc.fields, tc.topic, k.Opener(), &sc)
			} else {
				out, _, err = JSON{}.Encrypt([]byte("keep"), []byte(tc.value), tc.fields, k.Sealer(tc.topic), &sc)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
}

// loadgenAvroRecord is the load generator's record as hamba/avro sees it.
type loadgenAvroRecord struct {
	ID     string `avro:"id"`
	Status string `avro:"status"`
	SSN    string `avro:"ssn"`
	Notes  string `avro:"notes"`
}

func TestAvroLoadgenSchema(t *testing.T) {
	k := keyring(t)
	text, err := ReadAvroSchema(loadgenAvro)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(string(text))
	in := loadgenAvroRecord{ID: "6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e", Status: "ACTIVE", SSN: "123-45-6789", Notes: strings.Repeat("n", 900)}
	raw, err := avro.Marshal(schema, in)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewAvro(text)
	if err != nil {
		t.Fatal(err)
	}
	framed, err := NewAvroConfluent(map[uint32][]byte{7: text})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		codec *Avro
		value []byte
	}{
		{"unframed", plain, raw},
		{"confluent framing", framed, append([]byte{0, 0, 0, 0, 7}, raw...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTrip(t, k, tc.codec, tc.value, []string{"ssn"}, 1)
			var out loadgenAvroRecord
			body := enc
			if tc.codec.confluent {
				if !bytes.Equal(enc[:5], tc.value[:5]) {
					t.Fatal("framing changed")
				}
				body = enc[5:]
			}
			if err := avro.Unmarshal(schema, body, &out); err != nil {
				t.Fatalf("ciphertext record does not decode with the schema: %v", err)
			}
			if out.ID != in.ID || out.Status != in.Status || out.Notes != in.Notes {
				t.Fatalf("other fields changed: %+v", out)
			}
			env, err := base64.StdEncoding.DecodeString(out.SSN)
			if err != nil {
				t.Fatal(err)
			}
			isEnvelope(t, env)
		})
	}
	if err := plain.CheckFields([]string{"nope"}); err == nil {
		t.Fatal("unknown field accepted")
	}
	if err := plain.CheckFields([]string{"ssn"}); err != nil {
		t.Fatal(err)
	}
	var sc Scratch
	if _, _, err := framed.Encrypt(nil, append([]byte{0, 0, 0, 0, 8}, raw...), []string{"ssn"}, k.Sealer("topic"), &sc); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown schema id: %v", err)
	}
	if _, _, err := framed.Encrypt(nil, raw, []string{"ssn"}, k.Sealer("topic"), &sc); !errors.Is(err, ErrMalformed) {
		t.Fatalf("missing framing: %v", err)
	}
	if _, _, err := plain.Encrypt(nil, raw[:20], []string{"ssn"}, k.Sealer("topic"), &sc); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated: %v", err)
	}
}

// A schema with every Avro type before the sensitive fields, so the walk
// has to skip each of them.
const richAvro = `{"type":"record","name":"Rich","namespace":"t","fields":[
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
 {"name":"x","type":{"type":"fixed","name":"F","size":3}},
 {"name":"arr","type":{"type":"array","items":"string"}},
 {"name":"m","type":{"type":"map","values":"long"}},
 {"name":"n","type":["null","string"]},
 {"name":"sub","type":{"type":"record","name":"Sub","fields":[{"name":"s","type":"string"},{"name":"next","type":["null","Sub"]}]}},
 {"name":"secret","type":"bytes"},
 {"name":"maybe","type":["null","bytes","string"]},
 {"name":"ssn","type":"string"},
 {"name":"tail","type":"long"}
]}`

type richSub struct {
	S    string   `avro:"s"`
	Next *richSub `avro:"next"`
}

type rich struct {
	B      bool             `avro:"b"`
	I      int32            `avro:"i"`
	L      int64            `avro:"l"`
	F      float32          `avro:"f"`
	D      float64          `avro:"d"`
	E      string           `avro:"e"`
	X      [3]byte          `avro:"x"`
	Arr    []string         `avro:"arr"`
	M      map[string]int64 `avro:"m"`
	N      *string          `avro:"n"`
	Sub    richSub          `avro:"sub"`
	Secret []byte           `avro:"secret"`
	Maybe  any              `avro:"maybe"`
	SSN    string           `avro:"ssn"`
	Tail   int64            `avro:"tail"`
}

func TestAvroEveryType(t *testing.T) {
	k := keyring(t)
	schema := avro.MustParse(richAvro)
	c, err := NewAvro([]byte(richAvro))
	if err != nil {
		t.Fatal(err)
	}
	s := "some"
	base := rich{B: true, I: -5, L: 1 << 40, F: 1.5, D: -2.25, E: "C", X: [3]byte{1, 2, 3},
		Arr: []string{"a", "bb", ""}, M: map[string]int64{"k": -1}, N: &s,
		Sub: richSub{S: "x", Next: &richSub{S: "y"}}, Secret: []byte{0, 1, 2}, SSN: "123-45-6789", Tail: 42}
	for _, tc := range []struct {
		name      string
		maybe     any
		fields    []string
		wantFound int
	}{
		{"three fields, union on bytes", []byte("mb"), []string{"ssn", "secret", "maybe"}, 3},
		{"union on string", "ms", []string{"maybe"}, 1},
		{"union on null is absent", nil, []string{"maybe"}, 0},
		{"union null, others found", nil, []string{"maybe", "ssn"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.Maybe = tc.maybe
			raw, err := avro.Marshal(schema, in)
			if err != nil {
				t.Fatal(err)
			}
			enc := roundTrip(t, k, c, raw, tc.fields, tc.wantFound)
			var out rich
			if err := avro.Unmarshal(schema, enc, &out); err != nil {
				t.Fatalf("ciphertext does not decode with the schema: %v", err)
			}
			if out.Tail != 42 || out.Sub.Next.S != "y" || out.M["k"] != -1 {
				t.Fatalf("fields around the spliced ones changed: %+v", out)
			}
		})
	}
	if err := c.CheckFields([]string{"tail"}); err == nil {
		t.Fatal("long field accepted as envelope carrier")
	}
}

// testProtoSet builds a descriptor set for a message with fields of
// several wire types, without protoc.
func testProtoSet(t testing.TB) []byte {
	t.Helper()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	i64 := descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()
	byt := descriptorpb.FieldDescriptorProto_TYPE_BYTES.Enum()
	f32 := descriptorpb.FieldDescriptorProto_TYPE_FIXED32.Enum()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	rep := descriptorpb.FieldDescriptorProto_LABEL_REPEATED.Enum()
	fd := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("t.proto"),
		Package: proto.String("t"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{
			Name: proto.String("M"),
			Field: []*descriptorpb.FieldDescriptorProto{
				{Name: proto.String("name"), Number: proto.Int32(1), Type: str, Label: opt, JsonName: proto.String("name")},
				{Name: proto.String("n"), Number: proto.Int32(2), Type: i64, Label: opt, JsonName: proto.String("n")},
				{Name: proto.String("ssn"), Number: proto.Int32(3), Type: str, Label: opt, JsonName: proto.String("ssn")},
				{Name: proto.String("blob"), Number: proto.Int32(4), Type: byt, Label: opt, JsonName: proto.String("blob")},
				{Name: proto.String("tags"), Number: proto.Int32(5), Type: str, Label: rep, JsonName: proto.String("tags")},
				{Name: proto.String("pin"), Number: proto.Int32(6), Type: i64, Label: opt, JsonName: proto.String("pin")},
				{Name: proto.String("fx"), Number: proto.Int32(7), Type: f32, Label: opt, JsonName: proto.String("fx")},
			},
		}},
	}
	b, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{fd}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dynMessage(t testing.TB, set []byte, name string) protoreflect.MessageType {
	t.Helper()
	var fds descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(set, &fds); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&fds)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatal(err)
	}
	return dynamicpb.NewMessageType(d.(protoreflect.MessageDescriptor))
}

func TestProtobuf(t *testing.T) {
	k := keyring(t)
	lg, err := os.ReadFile(loadgenProto)
	if err != nil {
		t.Fatal(err)
	}
	lgCodec, err := NewProtobuf(lg, "")
	if err != nil {
		t.Fatal(err)
	}
	if lgCodec.Message() != "xp.Record" {
		t.Fatalf("loadgen message %q", lgCodec.Message())
	}
	set := testProtoSet(t)
	tCodec, err := NewProtobuf(set, "t.M")
	if err != nil {
		t.Fatal(err)
	}
	var lgValue []byte
	for i, v := range []string{"6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e", "ACTIVE", "123-45-6789", strings.Repeat("n", 900)} {
		lgValue = protowire.AppendTag(lgValue, protowire.Number(i+1), protowire.BytesType)
		lgValue = protowire.AppendString(lgValue, v)
	}
	mt := dynMessage(t, set, "t.M")
	m := mt.New()
	fds := m.Descriptor().Fields()
	m.Set(fds.ByName("name"), protoreflect.ValueOfString("nm"))
	m.Set(fds.ByName("n"), protoreflect.ValueOfInt64(-7))
	m.Set(fds.ByName("ssn"), protoreflect.ValueOfString("123-45-6789"))
	m.Set(fds.ByName("blob"), protoreflect.ValueOfBytes([]byte{9, 9}))
	m.Set(fds.ByName("pin"), protoreflect.ValueOfInt64(1234))
	m.Set(fds.ByName("fx"), protoreflect.ValueOfUint32(77))
	tags := m.Mutable(fds.ByName("tags")).List()
	tags.Append(protoreflect.ValueOfString("a"))
	tags.Append(protoreflect.ValueOfString("b"))
	tValue, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Interface())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		codec     *Protobuf
		mt        protoreflect.MessageType
		value     []byte
		fields    []string
		wantFound int
	}{
		{"loadgen record ssn", lgCodec, dynMessage(t, lg, "xp.Record"), lgValue, []string{"ssn"}, 1},
		{"string, bytes, varint and fixed32 fields", tCodec, mt, tValue, []string{"ssn", "blob", "pin", "fx"}, 4},
		{"repeated field, every occurrence", tCodec, mt, tValue, []string{"tags"}, 1},
		{"absent field", tCodec, mt, tValue[:0], []string{"ssn"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := roundTrip(t, k, tc.codec, tc.value, tc.fields, tc.wantFound)
			if tc.wantFound == 0 {
				return
			}
			// The ciphertext still parses with the schema; fields not
			// named are unchanged and the named string fields hold
			// base64 text of an envelope.
			before, after := tc.mt.New().Interface(), tc.mt.New().Interface()
			if err := proto.Unmarshal(tc.value, before); err != nil {
				t.Fatal(err)
			}
			if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(enc, after); err != nil {
				t.Fatalf("ciphertext does not parse: %v", err)
			}
			fs := tc.mt.Descriptor().Fields()
			for i := 0; i < fs.Len(); i++ {
				fd := fs.Get(i)
				named := false
				for _, f := range tc.fields {
					named = named || string(fd.Name()) == f
				}
				if !named {
					if !before.ProtoReflect().Get(fd).Equal(after.ProtoReflect().Get(fd)) {
						t.Fatalf("field %s changed", fd.Name())
					}
					continue
				}
				if fd.Kind() == protoreflect.StringKind && !fd.IsList() {
					env, err := base64.StdEncoding.DecodeString(after.ProtoReflect().Get(fd).String())
					if err != nil {
						t.Fatal(err)
					}
					isEnvelope(t, env)
				}
			}
		})
	}
	t.Run("one scratch across codecs and field lists", func(t *testing.T) {
		// The scratch remembers the last codec's field numbers: a change
		// of codec or of fields must not reuse them.
		var sc Scratch
		for _, c := range []struct {
			codec  *Protobuf
			value  []byte
			fields []string
			want   int
		}{
			{lgCodec, lgValue, []string{"ssn"}, 1},
			{tCodec, tValue, []string{"ssn"}, 1},
			{tCodec, tValue, []string{"pin", "fx"}, 2},
			{lgCodec, lgValue, []string{"status", "ssn"}, 2},
		} {
			enc, found, err := c.codec.Encrypt(nil, c.value, c.fields, k.Sealer("topic"), &sc)
			if err != nil || len(found) != c.want {
				t.Fatalf("%v: found %v, %v", c.fields, found, err)
			}
			dec, err := c.codec.Decrypt(nil, enc, found, "topic", k.Opener(), &sc)
			if err != nil || !bytes.Equal(dec, c.value) {
				t.Fatalf("%v: round trip: %v", c.fields, err)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		var sc Scratch
		enc, found, err := tCodec.Encrypt(nil, tValue, []string{"blob"}, k.Sealer("topic"), &sc)
		if err != nil || len(found) != 1 {
			t.Fatal(err)
		}
		// Renumber the encrypted field 4 → 6 ("pin"): AAD binds the name.
		moved := bytes.Clone(enc)
		idx := bytes.Index(moved, protowire.AppendTag(nil, 4, protowire.BytesType))
		moved[idx] = byte(protowire.EncodeTag(6, protowire.BytesType))
		for _, tc := range []struct {
			name   string
			value  []byte
			fields []string
			topic  string
			want   error
		}{
			{"wrong topic", enc, []string{"blob"}, "other", envelope.ErrAuth},
			{"moved to another field", moved, []string{"pin"}, "topic", envelope.ErrAuth},
			{"field not encrypted", tValue, []string{"blob"}, "topic", envelope.ErrMalformed},
			{"field wire type varint", tValue, []string{"n"}, "topic", ErrFieldType},
			{"field missing", tValue[:0], []string{"blob"}, "topic", ErrFieldType},
			{"truncated", enc[:len(enc)-3], []string{"blob"}, "topic", ErrMalformed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				out, err := tCodec.Decrypt([]byte("keep"), tc.value, tc.fields, tc.topic, k.Opener(), &sc)
				if !errors.Is(err, tc.want) {
					t.Fatalf("err %v, want %v", err, tc.want)
				}
				if string(out) != "keep" {
					t.Fatal("dst changed on error")
				}
			})
		}
		if _, err := NewProtobuf(set, "t.Nope"); err == nil {
			t.Fatal("unknown message accepted")
		}
		if err := tCodec.CheckFields([]string{"nope"}); err == nil {
			t.Fatal("unknown field accepted")
		}
	})
}

// fuzzProperty: whatever Encrypt accepts, Decrypt restores exactly; and
// Decrypt never panics on anything.
func fuzzProperty(t *testing.T, k *envelope.Keyring, c Codec, value []byte, fields []string) {
	var sc Scratch
	enc, found, err := c.Encrypt(nil, value, fields, k.Sealer("t"), &sc)
	if err == nil && len(found) > 0 {
		dec, err := c.Decrypt(nil, enc, found, "t", k.Opener(), &sc)
		if err != nil || !bytes.Equal(dec, value) {
			t.Fatalf("round trip of %q: %v, got %q", value, err, dec)
		}
	}
	_, _ = c.Decrypt(nil, value, fields, "t", k.Opener(), &sc)
}

func FuzzJSON(f *testing.F) {
	k := keyring(f)
	for _, s := range []string{`{"ssn":"1"}`, `{"a":[1,{"b":"}"}],"ssn":null}`, `{"s\u0073n":"x"}`, ` { } `} {
		f.Add([]byte(s))
	}
	var sc Scratch
	enc, _, _ := JSON{}.Encrypt(nil, []byte(`{"ssn":"1"}`), []string{"ssn"}, k.Sealer("t"), &sc)
	f.Add(enc)
	f.Fuzz(func(t *testing.T, v []byte) { fuzzProperty(t, k, JSON{}, v, []string{"ssn"}) })
}

func FuzzAvro(f *testing.F) {
	k := keyring(f)
	c, err := NewAvro([]byte(richAvro))
	if err != nil {
		f.Fatal(err)
	}
	s := "x"
	raw, err := avro.Marshal(avro.MustParse(richAvro), rich{E: "A", Arr: []string{"a"}, M: map[string]int64{"k": 1}, N: &s, Maybe: []byte("m"), SSN: "1"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	var sc Scratch
	enc, _, _ := c.Encrypt(nil, raw, []string{"ssn", "maybe"}, k.Sealer("t"), &sc)
	f.Add(enc)
	f.Fuzz(func(t *testing.T, v []byte) { fuzzProperty(t, k, c, v, []string{"ssn", "maybe"}) })
}

func FuzzProtobuf(f *testing.F) {
	k := keyring(f)
	c, err := NewProtobuf(testProtoSet(f), "t.M")
	if err != nil {
		f.Fatal(err)
	}
	v := protowire.AppendTag(nil, 3, protowire.BytesType)
	v = protowire.AppendString(v, "123")
	v = protowire.AppendTag(v, 2, protowire.VarintType)
	v = protowire.AppendVarint(v, 5)
	f.Add(v)
	var sc Scratch
	enc, _, _ := c.Encrypt(nil, v, []string{"ssn", "n"}, k.Sealer("t"), &sc)
	f.Add(enc)
	f.Fuzz(func(t *testing.T, v []byte) { fuzzProperty(t, k, c, v, []string{"ssn", "n"}) })
}
