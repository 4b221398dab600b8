package encrypt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/gateway/fields"
	"github.com/xp-bench/xp/planner"
)

// Encodings of field_encrypt values.
const (
	EncodingJSON     = "json"
	EncodingAvro     = "avro"
	EncodingProtobuf = "protobuf"
)

// ConfigKey is the gateway config key this package handles.
const ConfigKey = "encrypt"

// Config is the `encrypt:` section of a gateway config:
//
//	encrypt:
//	  vault: kek.keys            # KEK file, mode 0600 (`ID BASE64KEY` lines, last one active)
//	  create_vault: true         # create it with one fresh key if missing (default false)
//	  data_key_max_encryptions: 4294967296   # rotate a data key after this many (default 2^32)
//	  data_key_max_age: 1h       # ... or after this long (default 1h)
//	  vault_reload: 10s          # re-read the vault when it changed, checked this often (default 10s, -1s never)
//	  topics:                    # first matching pattern wins; other topics pass untouched
//	    - pattern: "payments.*"  # glob: * ? [a-z]
//	      mode: encrypt          # whole values
//	      encrypt_key: false     # also the record key (breaks log compaction: keys become unique)
//	      encrypt_headers: false # also every header value (header names stay readable)
//	    - pattern: "*"
//	      mode: field_encrypt
//	      encoding: json         # json | avro | protobuf
//	      fields: [ssn]          # top-level field names; default [ssn]
//	      cipher: aead           # aead (default): an AES-GCM envelope per field;
//	                             # fpe: FF1 format-preserving, string fields only
//	      avro_schema: record.avsc          # avro without framing: one schema
//	      avro_schemas: {1: record.avsc}    # avro with Confluent framing: schema id → file
//	      protobuf_descriptor_set: record.pb  # FileDescriptorSet (protoc --descriptor_set_out)
//	      protobuf_message: xp.Record         # default: the set's only message
//
// Paths are absolute or relative to the config file.
type Config struct {
	Vault                 string        `yaml:"vault"`
	CreateVault           bool          `yaml:"create_vault"`
	DataKeyMaxEncryptions uint64        `yaml:"data_key_max_encryptions"`
	DataKeyMaxAge         time.Duration `yaml:"data_key_max_age"`
	VaultReload           time.Duration `yaml:"vault_reload"`
	Topics                []TopicRule   `yaml:"topics"`
}

// DefaultVaultReload is how often a filter checks its vault file for a
// change (a key added: KEK rotation without a restart).
const DefaultVaultReload = 10 * time.Second

// Preset is the configuration the local target uses for a security mode:
// encrypt encrypts every value of every topic; field_encrypt the
// field ssn of JSON values of every topic. The vault is created (one key,
// k1) if missing; create it before starting several gateways on one vault
// (envelope.AddKey), so that they do not race to create different keys.
func Preset(mode, vault string) (Config, error) {
	cfg := Config{Vault: vault, CreateVault: true}
	switch mode {
	case planner.SecurityEncrypt:
		cfg.Topics = []TopicRule{{Pattern: "*", Mode: planner.SecurityEncrypt}}
	case planner.SecurityFieldEncrypt:
		cfg.Topics = []TopicRule{{Pattern: "*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingJSON, Fields: DefaultFields}}
	default:
		return Config{}, fmt.Errorf("encrypt: no preset for mode %q (want encrypt or field_encrypt)", mode)
	}
	return cfg, nil
}

// TopicRule says how the topics matching Pattern are encrypted.
type TopicRule struct {
	Pattern string `yaml:"pattern"`
	// Mode is the security mode the rule implements:
	// planner.SecurityEncrypt (whole values) or
	// planner.SecurityFieldEncrypt (named top-level fields of structured
	// values).
	Mode                  string            `yaml:"mode"`
	EncryptKey            bool              `yaml:"encrypt_key"`
	EncryptHeaders        bool              `yaml:"encrypt_headers"`
	Encoding              string            `yaml:"encoding"`
	Fields                []string          `yaml:"fields"`
	AvroSchema            string            `yaml:"avro_schema"`
	AvroSchemas           map[uint32]string `yaml:"avro_schemas"`
	ProtobufDescriptorSet string            `yaml:"protobuf_descriptor_set"`
	ProtobufMessage       string            `yaml:"protobuf_message"`
	// Cipher is how field_encrypt encrypts a field: CipherAEAD (default)
	// or CipherFPE.
	Cipher string `yaml:"cipher,omitempty"`
	// RequireEncryption refuses, on fetch, records of these topics that
	// carry no envelope (no marker header, or the plaintext marker):
	// their partition fails with the code of a decrypt failure
	// (ErrCodeIntegrity), so plaintext written around the gateway never
	// reaches its consumers. Records the gateway itself leaves plain
	// (field_encrypt records with none of the fields) are refused too.
	// Default false: such records pass unchanged.
	RequireEncryption bool `yaml:"require_encryption"`
}

// Ciphers of field_encrypt (TopicRule.Cipher).
const (
	// CipherAEAD seals each field in an AES-256-GCM envelope (default).
	CipherAEAD = "aead"
	// CipherFPE encrypts each string field in place with FF1, keeping
	// its length and character classes (fields/format.go).
	CipherFPE = "fpe"
)

// DefaultFields are the fields field_encrypt encrypts when none are named.
var DefaultFields = []string{"ssn"}

// Extension is the gateway config extension for the `encrypt:` key; pass
// it to gateway.LoadConfig.
func Extension() gateway.Extension {
	return gateway.Extension{Key: ConfigKey, Build: func(node *yaml.Node, dir string) (gateway.RecordFilter, error) {
		// Strict decoding: an unknown key is an error naming its line.
		if err := checkKnown(node, reflect.TypeOf(Config{}), ConfigKey); err != nil {
			return nil, err
		}
		var cfg Config
		if err := node.Decode(&cfg); err != nil {
			var te *yaml.TypeError
			if errors.As(err, &te) && len(te.Errors) > 0 {
				msg, line := strings.TrimSpace(te.Errors[0]), node.Line
				if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
					_, msg, _ = strings.Cut(msg, ": ")
				}
				return nil, &gateway.ConfigError{Line: line, Msg: ConfigKey + ": " + msg}
			}
			return nil, &gateway.ConfigError{Line: node.Line, Msg: ConfigKey + ": " + err.Error()}
		}
		f, err := New(cfg, dir)
		if err != nil {
			return nil, &gateway.ConfigError{Line: node.Line, Msg: fmt.Sprintf("%s: %v", ConfigKey, err)}
		}
		return f, nil
	}}
}

// checkKnown rejects keys that t has no yaml field for, naming the line and
// the keys that are known.
func checkKnown(n *yaml.Node, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice:
		for i, c := range n.Content {
			if err := checkKnown(c, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	case n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct:
		return nil
	}
	fieldsOf := map[string]reflect.Type{}
	var known []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fieldsOf[name] = t.Field(i).Type
			known = append(known, name)
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fieldsOf[k.Value]
		if !ok {
			return &gateway.ConfigError{Line: k.Line, Msg: fmt.Sprintf("%s: unknown key %q (known: %s)", at, k.Value, strings.Join(known, ", "))}
		}
		if err := checkKnown(v, ft, at+"."+k.Value); err != nil {
			return err
		}
	}
	return nil
}

// FieldPreset is a field_encrypt configuration for every topic with the
// load generator's record in one encoding: json, or avro (unframed, the
// schema schemaDir/record.avsc) or protobuf (the descriptor set
// schemaDir/record.pb, message xp.Record); the field is ssn. The vault is
// created if missing, as with Preset.
func FieldPreset(encoding, vault, schemaDir string) (Config, error) {
	rule := TopicRule{Pattern: "*", Mode: planner.SecurityFieldEncrypt, Encoding: encoding, Fields: DefaultFields}
	switch encoding {
	case EncodingJSON:
	case EncodingAvro:
		rule.AvroSchema = filepath.Join(schemaDir, "record.avsc")
	case EncodingProtobuf:
		rule.ProtobufDescriptorSet = filepath.Join(schemaDir, "record.pb")
		rule.ProtobufMessage = "xp.Record"
	default:
		return Config{}, fmt.Errorf("encrypt: no field preset for encoding %q (want json, avro or protobuf)", encoding)
	}
	return Config{Vault: vault, CreateVault: true, Topics: []TopicRule{rule}}, nil
}

// rule is a compiled TopicRule.
type rule struct {
	pattern string
	fields  bool // field_encrypt, else whole values
	key     bool // mode encrypt: the key too
	headers bool // mode encrypt: header values too
	names   []string
	codec   fields.Codec
	// marker is the value of the header that marks a record this rule
	// encrypted with all of its fields (see header.go).
	marker []byte
	// require refuses fetched records without an envelope.
	require bool
	// fpe encrypts the fields with format-preserving FF1.
	fpe bool
}

func resolve(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

func compileRules(cfg Config, dir string) ([]*rule, error) {
	if len(cfg.Topics) == 0 {
		return nil, errors.New("topics: at least one rule is needed (pattern and mode)")
	}
	var out []*rule
	for i, tr := range cfg.Topics {
		r, err := compileRule(fmt.Sprintf("topics[%d]", i), tr, dir)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// compileRule compiles topic rule tr, found at at; dir resolves its
// schema files.
func compileRule(at string, tr TopicRule, dir string) (*rule, error) {
	if tr.Pattern == "" {
		return nil, fmt.Errorf("%s.pattern: required (a glob such as \"*\" or \"orders.*\")", at)
	}
	if _, err := path.Match(tr.Pattern, ""); err != nil {
		return nil, fmt.Errorf("%s.pattern %q: %v", at, tr.Pattern, err)
	}
	r := &rule{pattern: tr.Pattern, require: tr.RequireEncryption}
	switch tr.Mode {
	case planner.SecurityEncrypt:
		if tr.Encoding != "" || len(tr.Fields) > 0 || tr.Cipher != "" {
			return nil, fmt.Errorf("%s: mode encrypt takes no encoding, fields or cipher (use mode field_encrypt)", at)
		}
		r.key, r.headers = tr.EncryptKey, tr.EncryptHeaders
		r.marker = wholeMarker(r.key, r.headers)
		return r, nil
	case planner.SecurityFieldEncrypt:
		if tr.EncryptKey || tr.EncryptHeaders {
			return nil, fmt.Errorf("%s: encrypt_key and encrypt_headers belong to mode encrypt", at)
		}
		r.fields = true
		switch tr.Cipher {
		case "", CipherAEAD:
		case CipherFPE:
			r.fpe = true
		default:
			return nil, fmt.Errorf("%s.cipher %q: want aead or fpe", at, tr.Cipher)
		}
	default:
		return nil, fmt.Errorf("%s.mode %q: want encrypt or field_encrypt", at, tr.Mode)
	}
	r.names = tr.Fields
	if len(r.names) == 0 {
		r.names = DefaultFields
	}
	for _, n := range r.names {
		if n == "" || strings.ContainsAny(n, ",:") {
			return nil, fmt.Errorf("%s.fields: %q is not a field name", at, n)
		}
	}
	var err error
	if r.codec, err = fieldCodec(at, tr, dir, r.names, r.fpe); err != nil {
		return nil, err
	}
	r.marker = markerValue(r.names)
	return r, nil
}

// fieldCodec is the codec of tr's record encoding, checked to hold the
// fields names (as strings, for fpe).
func fieldCodec(at string, tr TopicRule, dir string, names []string, fpe bool) (fields.Codec, error) {
	switch tr.Encoding {
	case EncodingJSON:
		return fields.JSON{}, nil
	case EncodingAvro:
		a, err := avroCodec(at, tr, dir)
		if err != nil {
			return nil, err
		}
		check := a.CheckFields
		if fpe {
			check = a.CheckStringFields
		}
		if err := check(names); err != nil {
			return nil, fmt.Errorf("%s.fields: %v", at, err)
		}
		return a, nil
	case EncodingProtobuf:
		if tr.ProtobufDescriptorSet == "" {
			return nil, fmt.Errorf("%s: encoding protobuf needs protobuf_descriptor_set (protoc --descriptor_set_out)", at)
		}
		b, err := os.ReadFile(resolve(dir, tr.ProtobufDescriptorSet))
		if err != nil {
			return nil, fmt.Errorf("%s.protobuf_descriptor_set: %v", at, err)
		}
		p, err := fields.NewProtobuf(b, tr.ProtobufMessage)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", at, err)
		}
		check := p.CheckFields
		if fpe {
			check = p.CheckStringFields
		}
		if err := check(names); err != nil {
			return nil, fmt.Errorf("%s.fields: %v", at, err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("%s.encoding %q: want json, avro or protobuf", at, tr.Encoding)
}

// avroCodec reads tr's Avro schema: one without framing (avro_schema), or
// one per Confluent schema id (avro_schemas).
func avroCodec(at string, tr TopicRule, dir string) (*fields.Avro, error) {
	switch {
	case tr.AvroSchema != "" && len(tr.AvroSchemas) > 0:
		return nil, fmt.Errorf("%s: give avro_schema (no framing) or avro_schemas (Confluent framing), not both", at)
	case tr.AvroSchema != "":
		b, err := fields.ReadAvroSchema(resolve(dir, tr.AvroSchema))
		if err != nil {
			return nil, fmt.Errorf("%s.avro_schema: %v", at, err)
		}
		a, err := fields.NewAvro(b)
		if err != nil {
			return nil, fmt.Errorf("%s.avro_schema: %v", at, err)
		}
		return a, nil
	case len(tr.AvroSchemas) > 0:
		m := map[uint32][]byte{}
		for id, p := range tr.AvroSchemas {
			b, err := fields.ReadAvroSchema(resolve(dir, p))
			if err != nil {
				return nil, fmt.Errorf("%s.avro_schemas[%d]: %v", at, id, err)
			}
			m[id] = b
		}
		a, err := fields.NewAvroConfluent(m)
		if err != nil {
			return nil, fmt.Errorf("%s.avro_schemas: %v", at, err)
		}
		return a, nil
	}
	return nil, fmt.Errorf("%s: encoding avro needs avro_schema (a .avsc file) or avro_schemas (schema id → file)", at)
}

func openVault(cfg Config, dir string) (*envelope.Vault, error) {
	if cfg.Vault == "" {
		return nil, errors.New("vault: required (the 0600 key file of key-encryption keys)")
	}
	p := resolve(dir, cfg.Vault)
	if cfg.CreateVault {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			if err := envelope.AddKey(p, "k1"); err != nil {
				return nil, fmt.Errorf("vault: %v", err)
			}
		}
	}
	v, err := envelope.OpenVault(p)
	if err != nil {
		return nil, fmt.Errorf("vault: %v", err)
	}
	return v, nil
}
