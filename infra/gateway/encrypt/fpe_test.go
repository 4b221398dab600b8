package encrypt

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/planner"
)

// fpeRules: f*-* topics encrypt ssn and status with cipher fpe, in JSON,
// Avro (unframed and Confluent-framed) and Protobuf.
func fpeRules() []TopicRule {
	f := []string{"ssn", "status"}
	return []TopicRule{
		{Pattern: "fj-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingJSON, Fields: f},
		{Pattern: "fa-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingAvro, AvroSchema: loadgenAvro, Fields: f},
		{Pattern: "fc-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingAvro, AvroSchemas: map[uint32]string{1: loadgenAvro}, Fields: f},
		{Pattern: "fp-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingProtobuf, ProtobufDescriptorSet: loadgenProto, Fields: f},
	}
}

var fpeTopics = map[string]string{"fj-": EncodingJSON, "fa-": EncodingAvro, "fc-": encodingAvroConfluent, "fp-": EncodingProtobuf}

// sameFormat reports why b does not keep a's format (length; digits,
// upper- and lower-case letters where a has them; every other byte), or "".
func sameFormat(a, b string) string {
	if len(a) != len(b) {
		return "length changed"
	}
	class := func(c byte) byte {
		switch {
		case c >= '0' && c <= '9':
			return 'd'
		case c >= 'A' && c <= 'Z':
			return 'u'
		case c >= 'a' && c <= 'z':
			return 'l'
		}
		return c
	}
	for i := range len(a) {
		if class(a[i]) != class(b[i]) {
			return "byte " + string(rune('0'+i%10)) + " changed class"
		}
	}
	return ""
}

// fieldsAtRest decodes the load generator's record in an encoding.
func fieldsAtRest(t *testing.T, enc string, v []byte) payload {
	t.Helper()
	switch enc {
	case EncodingJSON:
		var m map[string]string
		if err := json.Unmarshal(v, &m); err != nil {
			t.Fatalf("not JSON at rest: %v: %q", err, v)
		}
		return payload{m["id"], m["status"], m["ssn"], m["notes"]}
	case EncodingAvro, encodingAvroConfluent:
		if enc == encodingAvroConfluent {
			v = v[5:]
		}
		var r struct {
			ID     string `avro:"id"`
			Status string `avro:"status"`
			SSN    string `avro:"ssn"`
			Notes  string `avro:"notes"`
		}
		if err := avro.Unmarshal(avro.MustParse(string(readFile(t, loadgenAvro))), v, &r); err != nil {
			t.Fatalf("not Avro of the schema at rest: %v", err)
		}
		return payload{r.ID, r.Status, r.SSN, r.Notes}
	}
	mt := loadgenMessage(t)
	m := mt.New().Interface()
	if err := proto.Unmarshal(v, m); err != nil {
		t.Fatalf("not the Protobuf message at rest: %v", err)
	}
	get := func(n string) string {
		return m.ProtoReflect().Get(mt.Descriptor().Fields().ByName(protoreflect.Name(n))).String()
	}
	return payload{get("id"), get("status"), get("ssn"), get("notes")}
}

// TestFPERoundTrip produces the load generator's records through a
// gateway encrypting ssn and status with cipher fpe in every encoding:
// at rest the value is the same size, still decodes with its schema, the
// other fields are untouched and ssn and status keep their formats but
// differ; the marker names the KEK; franz-go and kcat read through the
// gateway exactly what was produced.
func TestFPERoundTrip(t *testing.T) {
	var topics []string
	for p := range fpeTopics {
		topics = append(topics, p+"lz4")
	}
	kf := startKfake(t, topics...)
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: fpeRules()})
	direct := kf.ListenAddrs()[0]
	for prefix, enc := range fpeTopics {
		t.Run(enc, func(t *testing.T) {
			topic := prefix + "lz4"
			produced, pls := testRecords(enc, 40, 5, true)
			if err := produce(t, e.gw.Bootstrap(), topic, kgo.Lz4Compression(), produced); err != nil {
				t.Fatal(err)
			}
			byTS := map[int64]int{}
			for i, r := range produced {
				byTS[r.Timestamp.UnixMilli()] = i
			}
			rest := consume(t, direct, topic, 40)
			for _, r := range rest {
				i := byTS[r.Timestamp.UnixMilli()]
				want := produced[i]
				if want.Value == nil {
					if r.Value != nil {
						t.Fatal("tombstone changed")
					}
					continue
				}
				if len(r.Value) != len(want.Value) || bytes.Equal(r.Value, want.Value) {
					t.Fatalf("value at rest: %d bytes (produced %d), equal %v", len(r.Value), len(want.Value), bytes.Equal(r.Value, want.Value))
				}
				got, w := fieldsAtRest(t, enc, r.Value), pls[i]
				if got.id != w.id || got.notes != w.notes {
					t.Fatal("a field not named changed at rest")
				}
				for _, f := range [][2]string{{w.ssn, got.ssn}, {w.status, got.status}} {
					if why := sameFormat(f[0], f[1]); why != "" || f[0] == f[1] {
						t.Fatalf("%q rests as %q: %s", f[0], f[1], why)
					}
				}
				if h := r.Headers[len(r.Headers)-1]; h.Key != HeaderKey || string(h.Value) != "f1;k1:ssn,status" {
					t.Fatalf("marker %s=%q, want f1;k1:ssn,status", h.Key, h.Value)
				}
			}
			through := consume(t, e.gw.Bootstrap(), topic, 40)
			for _, got := range through {
				want := produced[byTS[got.Timestamp.UnixMilli()]]
				if !sameBytes(got.Key, want.Key) || !sameBytes(got.Value, want.Value) || !sameHeaders(got.Headers, want.Headers) {
					t.Fatalf("record %d/%d read through the gateway differs from what was produced", got.Partition, got.Offset)
				}
			}
			kcatMatches(t, e.gw.Bootstrap(), topic, through)
		})
	}
}

// TestFPEKeysAndFailures: FPE records made under two KEKs decrypt after a
// rotation, through the gateway that rotated and through a fresh one over
// the vault; a gateway whose vault lacks the KEK answers
// TOPIC_AUTHORIZATION_FAILED; a value too short for FF1 and a
// non-string JSON value fail the produce and nothing reaches the broker.
func TestFPEKeysAndFailures(t *testing.T) {
	kf := startKfake(t, "fj-rot", "fj-short", "fj-number")
	direct := kf.ListenAddrs()[0]
	vault := newVault(t, "k1")
	e := startGateway(t, kf, Config{Vault: vault, Topics: fpeRules()})
	first, _ := testRecords(EncodingJSON, 20, 1, false)
	produceTo(t, e.gw.Bootstrap(), "fj-rot", cloneAll(first)...)
	if err := envelope.AddKey(vault, "k2"); err != nil {
		t.Fatal(err)
	}
	if err := e.filter.Keyring().Reload(); err != nil {
		t.Fatal(err)
	}
	second, _ := testRecords(EncodingJSON, 20, 2, false)
	produceTo(t, e.gw.Bootstrap(), "fj-rot", cloneAll(second)...)
	markers := map[string]int{}
	for _, r := range consume(t, direct, "fj-rot", 40) {
		markers[string(r.Headers[len(r.Headers)-1].Value)]++
	}
	if markers["f1;k1:ssn,status"] != 20 || markers["f1;k2:ssn,status"] != 20 {
		t.Fatalf("markers at rest %v, want 20 under k1 and 20 under k2", markers)
	}
	want := map[string]bool{}
	for _, r := range append(first, second...) {
		want[string(r.Value)] = true
	}
	fresh := startGateway(t, kf, Config{Vault: vault, Topics: fpeRules()})
	for _, g := range []*env{e, fresh} {
		for _, r := range consume(t, g.gw.Bootstrap(), "fj-rot", 40) {
			if !want[string(r.Value)] {
				t.Fatalf("read %q, never produced", r.Value)
			}
		}
	}
	stranger := startGateway(t, kf, Config{Vault: newVault(t, "k3"), Topics: fpeRules()})
	if _, err := fetchOutcome(t, stranger.gw.Bootstrap(), "fj-rot", 0); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("fetch through a gateway without the KEK: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	for _, tc := range []struct{ topic, value string }{
		{"fj-short", `{"id":"x","status":"ACTIVE","ssn":"12-34","notes":""}`},
		{"fj-number", `{"id":"x","status":"ACTIVE","ssn":123456789,"notes":""}`},
	} {
		err := produce(t, e.gw.Bootstrap(), tc.topic, kgo.NoCompression(), []*kgo.Record{{Value: []byte(tc.value)}})
		if !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: produce %v, want INVALID_RECORD", tc.topic, err)
		}
		if got, _ := tryConsume(direct, tc.topic, 1, 500e6); len(got) != 0 {
			t.Errorf("%s: %d records reached the broker", tc.topic, len(got))
		}
	}
}

// TestFPEConfigRefusesNonStrings: cipher fpe on a field that is not a
// string is refused when the config loads, naming the rule and field.
func TestFPEConfigRefusesNonStrings(t *testing.T) {
	dir := t.TempDir()
	avsc := filepath.Join(dir, "r.avsc")
	if err := os.WriteFile(avsc, []byte(`{"type":"record","name":"R","fields":[{"name":"ssn","type":"string"},{"name":"age","type":"int"},{"name":"blob","type":"bytes"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	i64 := descriptorpb.FieldDescriptorProto_TYPE_INT64.Enum()
	str := descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum()
	set, err := proto.Marshal(&descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{{
		Name: proto.String("r.proto"), Package: proto.String("t"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("R"), Field: []*descriptorpb.FieldDescriptorProto{
			{Name: proto.String("ssn"), Number: proto.Int32(1), Type: str, JsonName: proto.String("ssn")},
			{Name: proto.String("pin"), Number: proto.Int32(2), Type: i64, JsonName: proto.String("pin")},
		}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(dir, "r.pb")
	if err := os.WriteFile(pb, set, 0o600); err != nil {
		t.Fatal(err)
	}
	vault := newVault(t, "k1")
	head := "upstream:\n  bootstrap: [127.0.0.1:9092]\nencrypt:\n  vault: " + vault + "\n  topics:\n"
	for _, tc := range []struct{ name, rule, want string }{
		{"avro string", "{pattern: '*', mode: field_encrypt, cipher: fpe, encoding: avro, avro_schema: " + avsc + "}", ""},
		{"avro int", "{pattern: '*', mode: field_encrypt, cipher: fpe, encoding: avro, avro_schema: " + avsc + ", fields: [ssn, age]}", `topics[1].fields: field "age" is not a string`},
		{"avro bytes", "{pattern: '*', mode: field_encrypt, cipher: fpe, encoding: avro, avro_schema: " + avsc + ", fields: [blob]}", `topics[1].fields: field "blob" is not a string`},
		{"avro bytes under aead", "{pattern: '*', mode: field_encrypt, encoding: avro, avro_schema: " + avsc + ", fields: [blob]}", ""},
		{"protobuf int64", "{pattern: '*', mode: field_encrypt, cipher: fpe, encoding: protobuf, protobuf_descriptor_set: " + pb + ", fields: [pin]}", `topics[1].fields: field "pin" of protobuf message t.R is not a string`},
		{"protobuf string", "{pattern: '*', mode: field_encrypt, cipher: fpe, encoding: protobuf, protobuf_descriptor_set: " + pb + "}", ""},
		{"unknown cipher", "{pattern: '*', mode: field_encrypt, cipher: ff3, encoding: json}", `topics[1].cipher "ff3": want aead or fpe`},
		{"cipher on mode encrypt", "{pattern: '*', mode: encrypt, cipher: fpe}", "mode encrypt takes no encoding, fields or cipher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A first rule, so that the path names the second one.
			yaml := head + "    - {pattern: 'x', mode: encrypt}\n    - " + tc.rule + "\n"
			_, err := gateway.ParseConfig([]byte(yaml), dir, Extension())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an error containing %q", err, tc.want)
			}
		})
	}
}
