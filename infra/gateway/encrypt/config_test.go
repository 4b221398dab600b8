package encrypt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/planner"
)

func TestConfigExtension(t *testing.T) {
	dir := t.TempDir()
	vault := newVault(t, "k1")
	loose := filepath.Join(dir, "loose.keys")
	if err := os.WriteFile(loose, readFile(t, vault), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	avsc, _ := filepath.Abs(loadgenAvro)
	pb, _ := filepath.Abs(loadgenProto)
	head := "upstream:\n  bootstrap: [127.0.0.1:9092]\nencrypt:\n"
	for _, tc := range []struct {
		name, yaml string
		want       string // "" = ok
	}{
		{"whole values", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: encrypt}\n", ""},
		{"json fields default ssn", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt, encoding: json}\n", ""},
		{"avro unframed", "  vault: " + vault + "\n  topics:\n    - {pattern: 'a*', mode: field_encrypt, encoding: avro, avro_schema: " + avsc + "}\n", ""},
		{"avro confluent", "  vault: " + vault + "\n  topics:\n    - {pattern: 'a*', mode: field_encrypt, encoding: avro, avro_schemas: {1: " + avsc + "}}\n", ""},
		{"protobuf", "  vault: " + vault + "\n  topics:\n    - {pattern: 'p*', mode: field_encrypt, encoding: protobuf, protobuf_descriptor_set: " + pb + ", fields: [ssn, notes]}\n", ""},
		{"create vault", "  vault: " + filepath.Join(dir, "new.keys") + "\n  create_vault: true\n  topics:\n    - {pattern: '*', mode: encrypt}\n", ""},
		{"unknown key", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: encrypt, colour: red}\n", `encrypt.topics[0]: unknown key "colour"`},
		{"bad mode", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: scramble}\n", "want encrypt or field_encrypt"},
		{"no topics", "  vault: " + vault + "\n", "at least one rule"},
		{"no vault", "  topics:\n    - {pattern: '*', mode: encrypt}\n", "vault: required"},
		{"vault readable by others", "  vault: " + loose + "\n  topics:\n    - {pattern: '*', mode: encrypt}\n", "chmod 600"},
		{"vault missing", "  vault: " + filepath.Join(dir, "nope") + "\n  topics:\n    - {pattern: '*', mode: encrypt}\n", "no such file"},
		{"wrong type", "  vault: " + vault + "\n  data_key_max_encryptions: lots\n  topics:\n    - {pattern: '*', mode: encrypt}\n", "cannot unmarshal"},
		{"bad glob", "  vault: " + vault + "\n  topics:\n    - {pattern: '[', mode: encrypt}\n", "pattern"},
		{"encoding missing", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt}\n", "want json, avro or protobuf"},
		{"avro without schema", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt, encoding: avro}\n", "needs avro_schema"},
		{"avro field absent", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt, encoding: avro, avro_schema: " + avsc + ", fields: [tax]}\n", "not in the Avro schema"},
		{"protobuf field absent", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt, encoding: protobuf, protobuf_descriptor_set: " + pb + ", fields: [tax]}\n", "not in protobuf message"},
		{"key encryption on field_encrypt", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: field_encrypt, encoding: json, encrypt_key: true}\n", "belong to mode encrypt"},
		{"encrypt with key and headers", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: encrypt, encrypt_key: true, encrypt_headers: true}\n", ""},
		{"require encryption", "  vault: " + vault + "\n  topics:\n    - {pattern: 'pay.*', mode: encrypt, require_encryption: true}\n    - {pattern: '*', mode: field_encrypt, encoding: json, require_encryption: false}\n", ""},
		{"require encryption not a bool", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: encrypt, require_encryption: always}\n", "cannot unmarshal"},
		{"encrypt with fields", "  vault: " + vault + "\n  topics:\n    - {pattern: '*', mode: encrypt, fields: [ssn]}\n", "takes no encoding, fields or cipher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := gateway.ParseConfig([]byte(head+tc.yaml), dir, Extension())
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(cfg.Filters) != 1 {
					t.Fatalf("%d filters", len(cfg.Filters))
				}
				return
			}
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want a ConfigError containing %q", err, tc.want)
			}
			if ce.Line == 0 {
				t.Fatalf("error names no line: %v", err)
			}
		})
	}
}

func TestFieldPreset(t *testing.T) {
	dir := t.TempDir()
	schemas, err := filepath.Abs("../../../runner/loadgen/schema")
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{EncodingJSON, EncodingAvro, EncodingProtobuf, "xml"} {
		t.Run(enc, func(t *testing.T) {
			cfg, err := FieldPreset(enc, filepath.Join(dir, "kek.keys"), schemas)
			if enc == "xml" {
				if err == nil {
					t.Fatal("xml accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := New(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			rt := newRoundTripper(t, "any-topic", enc)
			rt.f, rt.atRest = f, true
			if out := rt.run(t); !bytes.Equal(out, rt.batch) || bytes.Equal(rt.rest, rt.batch) {
				t.Fatal("preset does not encrypt ssn and restore it")
			}
		})
	}
}

func TestPreset(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		mode    string
		wantErr bool
	}{
		{planner.SecurityEncrypt, false},
		{planner.SecurityFieldEncrypt, false},
		{"proxy", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg, err := Preset(tc.mode, filepath.Join(dir, "kek.keys"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if tc.wantErr {
				return
			}
			f, err := New(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			enc := "bytes"
			if tc.mode == planner.SecurityFieldEncrypt {
				enc = EncodingJSON
			}
			rt := newRoundTripper(t, "any-topic", enc)
			rt.f, rt.atRest = f, true
			if out := rt.run(t); !bytes.Equal(out, rt.batch) || bytes.Equal(rt.rest, rt.batch) {
				t.Fatal("preset does not encrypt every topic and restore it")
			}
		})
	}
}

// TestConfigFileToRunningGateway: a gateway config file with an encrypt:
// section, loaded as `xp gateway --config` loads it, gives a running
// encrypting gateway.
func TestConfigFileToRunningGateway(t *testing.T) {
	kf := startKfake(t, "orders")
	dir := t.TempDir()
	yaml := fmt.Sprintf(`listen:
  host: 127.0.0.1
  bootstrap_port: 0
  node_port_base: 0
upstream:
  bootstrap: [%s]
metrics:
  listen: "off"
encrypt:
  vault: kek.keys
  create_vault: true
  topics:
    - pattern: "orders"
      mode: field_encrypt
      encoding: json
      fields: [ssn]
`, kf.ListenAddrs()[0])
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := gateway.LoadConfig(path, Extension())
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if fi, err := os.Stat(filepath.Join(dir, "kek.keys")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("vault not created 0600 beside the config: %v", err)
	}
	recs, _ := testRecords(EncodingJSON, 10, 5, false)
	if err := produce(t, g.Bootstrap(), "orders", kgo.NoCompression(), recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range consume(t, kf.ListenAddrs()[0], "orders", 10) {
		if bytes.Contains(r.Value, []byte(`"ssn":"`)) && !bytes.Contains(r.Value, []byte(`"ssn":"AQ`)) {
			t.Fatalf("ssn in plaintext at rest: %s", r.Value)
		}
	}
	want := map[string]bool{}
	for _, r := range recs {
		want[string(r.Value)] = true
	}
	for _, r := range consume(t, g.Bootstrap(), "orders", 10) {
		if !want[string(r.Value)] {
			t.Fatalf("through the gateway: %s", r.Value)
		}
	}
}
