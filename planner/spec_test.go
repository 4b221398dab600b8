package planner

import (
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

const exampleSpec = `campaign: tls-overhead      # required, [a-z0-9-]+
seed: 20261201
replicates: 3
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 10240]
fixed:
  brokers: 3
  acks: all
  target_rate: 10000
exclude:
  - {security: mtls, message_size: 10240}
`

func TestParseSpecExample(t *testing.T) {
	s, err := ParseSpec("x.yaml", []byte(exampleSpec))
	if err != nil {
		t.Fatal(err)
	}
	if s.Campaign != "tls-overhead" || s.Seed != 20261201 || !s.HasSeed || s.Replicates != 3 {
		t.Errorf("header: %+v", s)
	}
	if s.Treatment != "security" || s.Baseline.Str != "plaintext" {
		t.Errorf("treatment %s baseline %+v", s.Treatment, s.Baseline)
	}
	if len(s.Factors) != 2 || s.Factors[1].Field != "message_size" || s.Factors[1].Levels[1].Int != 10240 {
		t.Errorf("factors: %+v", s.Factors)
	}
	if len(s.Exclude) != 1 || len(s.Exclude[0]) != 2 {
		t.Errorf("exclude: %+v", s.Exclude)
	}
}

func TestParseSpecDefaults(t *testing.T) {
	s, err := ParseSpec("x.yaml", []byte(`campaign: d
factors: {security: [tls, plaintext]}
fixed: {brokers: 1, message_size: 100, acks: 1, target_rate: max}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Replicates != 1 || s.Treatment != "security" || s.Baseline.Str != "tls" {
		t.Errorf("defaults: replicates %d treatment %s baseline %v", s.Replicates, s.Treatment, s.Baseline)
	}
	if s.HasSeed || s.Seed != DefaultSeed("d") {
		t.Errorf("seed %d, want derived %d", s.Seed, DefaultSeed("d"))
	}
	if v, _ := s.fixedValue("acks"); v.Str != "1" {
		t.Errorf("acks 1 read as %q", v.Str)
	}
	if v, _ := s.fixedValue("target_rate"); Rate(v.Int) != RateMax {
		t.Errorf("target_rate max read as %d", v.Int)
	}
}

// TestParseSpecErrors checks that each bad input gets one clear message
// naming its line and, for typos, a suggestion.
func TestParseSpecErrors(t *testing.T) {
	base := "fixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 100}\n"
	block := "fixed:\n  brokers: 3\n  message_size: 1024\n  acks: all\n  target_rate: 100\n"
	cases := []struct {
		name string
		spec string
		want []string // substrings of the error, in order
	}{
		{"empty", "", []string{"x.yaml: spec is empty"}},
		{"not a mapping", "- a\n- b\n", []string{"x.yaml:1: a spec is a mapping"}},
		{"unknown top key", "campaign: c\nreplicate: 3\nfactors: {security: [tls]}\n" + base,
			[]string{`x.yaml:2: unknown key "replicate"; did you mean "replicates"?`}},
		{"row field at top", "campaign: c\nbrokers: 3\nfactors: {security: [tls]}\n" + base,
			[]string{`x.yaml:2: unknown key "brokers": row fields go under factors`}},
		{"unknown factor field", "campaign: c\nfactors:\n  security: [tls]\n  mesage_size: [1, 2]\n" + base,
			[]string{`x.yaml:4: factors: unknown row field "mesage_size"; did you mean "message_size"?`}},
		{"camel case field", "campaign: c\nfactors:\n  security: [tls]\n  messageSize: [1, 2]\n" + base,
			[]string{`x.yaml:4: factors: unknown row field "messageSize"; did you mean "message_size"?`}},
		{"unknown level", "campaign: c\nfactors:\n  security: [plaintext, tsl]\n" + base,
			[]string{`x.yaml:3: factors: security: unknown level "tsl"; did you mean "tls"?`}},
		{"wrong type", "campaign: c\nfactors:\n  security: [tls]\n  message_size: [1kb]\n" + base,
			[]string{`x.yaml:4: factors: message_size: want an integer, got "1kb"`}},
		{"empty levels", "campaign: c\nfactors:\n  security: []\n" + base,
			[]string{`x.yaml:3: factors: security: no levels`}},
		{"duplicate level", "campaign: c\nfactors:\n  security: [tls, plaintext, tls]\n" + base,
			[]string{`x.yaml:3: factors: security: level tls appears twice`}},
		{"duplicate acks level", "campaign: c\nfactors:\n  security: [tls]\n  acks: [1, \"1\"]\nfixed: {brokers: 3, message_size: 1024, target_rate: 100}\n",
			[]string{`x.yaml:4: factors: acks: level 1 appears twice`}},
		{"scalar factor", "campaign: c\nfactors:\n  security: tls\n" + base,
			[]string{`x.yaml:3: factors: security: want a list of levels`}},
		{"list under fixed", "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: [1, 3], message_size: 1024, acks: all, target_rate: 100}\n",
			[]string{`x.yaml:4: fixed: brokers: want one value; several levels go under factors`}},
		{"factor and fixed", "campaign: c\nfactors:\n  security: [tls]\n  brokers: [1, 3]\n" + base,
			[]string{`x.yaml:5: fixed: brokers is also under factors`}},
		{"baseline not a level", "campaign: c\nbaseline: mtls\nfactors:\n  security: [plaintext, tls]\n" + base,
			[]string{`x.yaml:2: baseline mtls is not a level of treatment security (plaintext, tls)`}},
		{"treatment unknown", "campaign: c\ntreatment: securty\nfactors:\n  security: [plaintext]\n" + base,
			[]string{`x.yaml:2: treatment "securty" is not a row field; did you mean "security"?`}},
		{"treatment not a factor", "campaign: c\ntreatment: compression\nfactors:\n  security: [plaintext]\n" + base,
			[]string{`x.yaml:2: treatment compression: list its levels under factors`}},
		{"treatment with derived default", "campaign: c\ntreatment: brokers\nfactors:\n  security: [tls]\n  brokers: [1, 3]\nfixed: {message_size: 1024, acks: all, target_rate: 100}\n",
			[]string{`x.yaml:2: treatment brokers: set replication_factor under fixed or factors`}},
		{"exclude unknown field", "campaign: c\nfactors:\n  security: [plaintext, tls]\n" + base + "exclude:\n  - {securty: tls}\n",
			[]string{`x.yaml:6: exclude entry 1: unknown row field "securty"; did you mean "security"?`}},
		{"exclude level not in factor", "campaign: c\nfactors:\n  security: [plaintext, tls]\n" + base + "exclude:\n  - {security: mtls}\n",
			[]string{`x.yaml:6: exclude entry 1: security mtls is not one of its levels (plaintext, tls), so it never matches`}},
		{"exclude empty entry", "campaign: c\nfactors:\n  security: [plaintext, tls]\n" + base + "exclude:\n  - {}\n",
			[]string{`x.yaml:6: exclude entry 1 is empty and would drop every row`}},
		{"missing required", "campaign: c\nfactors:\n  security: [tls]\nfixed: {brokers: 3}\n",
			[]string{"message_size is required", "acks is required", "target_rate is required"}},
		{"missing campaign", "factors:\n  security: [tls]\n" + base, []string{"campaign is required"}},
		{"bad campaign", "campaign: TLS_Overhead\nfactors:\n  security: [tls]\n" + base,
			[]string{`x.yaml:1: campaign "TLS_Overhead": use lower-case letters`}},
		{"duplicate key", "campaign: c\ncampaign: d\nfactors:\n  security: [tls]\n" + base, []string{"x.yaml:2: campaign appears twice (first at line 1)"}},
		{"bad replicates", "campaign: c\nreplicates: 0\nfactors:\n  security: [tls]\n" + base, []string{"x.yaml:2: replicates 0: want 1..1000"}},
		{"unknown encrypt field", "campaign: c\nfactors:\n  security: [field_encrypt]\n" + block + "  encrypt_fields: [snn]\n",
			[]string{"x.yaml:9: fixed: encrypt_fields: unknown \"snn\"; did you mean \"ssn\"?"}},
		{"bad kafka version", "campaign: c\nfactors:\n  security: [tls]\n" + block + "  kafka_version: latest\n",
			[]string{`x.yaml:9: fixed: kafka_version: "latest" is not a release number`}},
		{"too large", "campaign: c\nreplicates: 1000\nfactors:\n  security: [plaintext, tls, mtls, sasl_ssl, proxy, encrypt, field_encrypt]\n  partitions: [1,2,3,4,5,6,7,8,9,10]\n  producers: [1,2,3,4,5,6,7,8,9,10]\n  linger_ms: [1,2,3,4,5,6,7,8,9,10]\n  topics: [1,2,3,4,5,6,7,8,9,10]\n  consumer_groups: [1,2]\n" + base,
			[]string{"more than 100000000 rows"}},
		{"two documents", "campaign: c\nfactors: {security: [tls]}\n" + base + "---\ncampaign: d\n", []string{"one YAML document"}},
		{"yaml syntax", "campaign: [c\n", []string{"x.yaml: yaml: line"}},
		{"sorted, placeless last", "campaign: c\nfactors:\n  security: [plaintext, tsl]\n  mesage_size: [1]\nfixed: {brokers: 1, acks: all, target_rate: 10}\nexclude:\n  - {secrity: tls}\n",
			[]string{"x.yaml:3: factors: security", "x.yaml:4: factors: unknown row field", "x.yaml:7: exclude entry 1", "x.yaml: message_size is required"}},
		{"several at once", "campaign: c\nreplicats: 2\nfactors:\n  security: [tsl]\n" + base,
			[]string{`x.yaml:2: unknown key "replicats"`, `x.yaml:4: factors: security: unknown level "tsl"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("x.yaml", []byte(tc.spec))
			if err == nil {
				t.Fatalf("no error; want %q", tc.want)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("error\n%s\nlacks (in order) %q", msg, w)
				}
				at += i + len(w)
			}
		})
	}
}

func TestSuggestion(t *testing.T) {
	cases := []struct{ in, want string }{
		{"replicate", "replicates"},
		{"brokres", "brokers"},
		{"message-size", "message_size"},
		{"MessageSize", "message_size"},
		{"zzzzzz", ""},
		{"brokers", ""}, // an exact name needs no suggestion
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := yamlcheck.Closest(tc.in, append(FieldNames(), topKeys...)); got != tc.want {
				t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestWriteSpecRoundTrip: WriteSpec's output parses back to the same spec.
func TestWriteSpecRoundTrip(t *testing.T) {
	for _, src := range []string{exampleSpec, `campaign: r
replicates: 2
treatment: encoding
baseline: avro
factors:
  encoding: [json, avro, protobuf]
  target_rate: [max, 100]
  encrypt_fields: [[ssn], [ssn, id]]
  kafka_version: ["4.0", 3.9.1]
fixed: {security: field_encrypt, brokers: 1, message_size: 1024, acks: "0", concurrency: 4, instance_type: ""}
include:
  - {target_rate: 100, kafka_version: "4.0"}
  - {encrypt_fields: [ssn, id]}
exclude:
  - {encoding: json, target_rate: max}
`} {
		s, err := ParseSpec("a.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteSpec(&b, s); err != nil {
			t.Fatal(err)
		}
		s2, err := ParseSpec("b.yaml", []byte(b.String()))
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if !specEqual(s, s2) {
			t.Errorf("round trip differs:\n%+v\n%+v\n%s", s, s2, b.String())
		}
	}
}

func specEqual(a, b *Spec) bool {
	eqv := func(x, y Value) bool { return x.Str == y.Str && x.Int == y.Int && slices.Equal(x.List, y.List) }
	eqs := func(x, y []Setting) bool {
		return slices.EqualFunc(x, y, func(p, q Setting) bool { return p.Field == q.Field && eqv(p.Value, q.Value) })
	}
	return a.Campaign == b.Campaign && a.Seed == b.Seed && a.HasSeed == b.HasSeed && a.Replicates == b.Replicates &&
		a.Treatment == b.Treatment && eqv(a.Baseline, b.Baseline) &&
		slices.EqualFunc(a.Factors, b.Factors, func(p, q Factor) bool {
			return p.Field == q.Field && slices.EqualFunc(p.Levels, q.Levels, eqv)
		}) && eqs(a.Fixed, b.Fixed) && slices.EqualFunc(a.Include, b.Include, eqs) && slices.EqualFunc(a.Exclude, b.Exclude, eqs)
}
