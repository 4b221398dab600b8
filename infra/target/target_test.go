package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

func TestModeKey(t *testing.T) {
	tests := []struct {
		name string
		row  planner.Row
		want string
	}{
		{"direct", planner.Row{Security: "mtls", GatewayTransport: "tls"}, "mtls"},
		{"proxy default transport", planner.Row{Security: "proxy", GatewayTransport: "tls"}, "proxy"},
		{"proxy sasl", planner.Row{Security: "proxy", GatewayTransport: "sasl_ssl"}, "proxy.sasl_ssl"},
		{"field_encrypt defaults", planner.Row{Security: "field_encrypt", GatewayTransport: "tls", Encoding: "json",
			EncryptFields: []string{"ssn"}}, "field_encrypt"},
		{"field_encrypt avro mtls", planner.Row{Security: "field_encrypt", GatewayTransport: "mtls", Encoding: "avro"},
			"field_encrypt.avro.mtls"},
		{"field_encrypt other fields", planner.Row{Security: "field_encrypt", GatewayTransport: "tls", Encoding: "json",
			EncryptFields: []string{"ssn", "notes"}}, "field_encrypt.ssn+notes"},
		{"field_encrypt fpe", planner.Row{Security: "field_encrypt", GatewayTransport: "tls", Encoding: "json", FieldCipher: "fpe",
			EncryptFields: []string{"ssn"}}, "field_encrypt.fpe"},
		{"field_encrypt fpe avro sasl, fields, fast", planner.Row{Security: "field_encrypt", GatewayTransport: "sasl_ssl", Encoding: "avro",
			FieldCipher: "fpe", EncryptFields: []string{"ssn", "status"}, GatewayCrypto: "fast"}, "field_encrypt.fpe.avro.sasl_ssl.ssn+status.fast"},
		{"fpe ignored off field_encrypt", planner.Row{Security: "encrypt", GatewayTransport: "tls", FieldCipher: "fpe"}, "encrypt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ModeKey(&tc.row); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}

// flaky says whether it is transient by a method, as errors of other
// packages may.
type flaky struct{ transient bool }

func (f flaky) Error() string   { return "flaky" }
func (f flaky) Transient() bool { return f.transient }

func TestIsTransient(t *testing.T) {
	base := errors.New("rate limited")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", base, false},
		{"marked", Transient(base), true},
		{"marked and wrapped", fmt.Errorf("apply: %w", Transient(base)), true},
		{"the sentinel wrapped", fmt.Errorf("%w: capacity", ErrTransient), true},
		{"method true", fmt.Errorf("dial: %w", flaky{true}), true},
		{"method false", flaky{false}, false},
		{"cancelled", context.Canceled, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTransient(tc.err); got != tc.want {
				t.Fatalf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
	if Transient(nil) != nil {
		t.Fatal("Transient(nil) is not nil")
	}
	if err := Transient(base); !errors.Is(err, base) || err.Error() != base.Error() {
		t.Fatalf("Transient(%v) = %v: want the same message, wrapping it", base, err)
	}
}

// TestKfakeBroker: the embedded cluster names kfake at the module version
// go.mod requires (test binaries carry no module list, so this checks the
// fallback kfakeVersion too), and round-trips through ParseBroker as hosts
// record it.
func TestKfakeBroker(t *testing.T) {
	b := KfakeBroker()
	if b.Kind != BrokerKfake || b.Version == "" || b.Version == "unknown" || b.Java != "" {
		t.Fatalf("%+v: want kfake with its module version", b)
	}
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), KfakeModule+" "+b.Version+"\n") {
		t.Errorf("kfake %s is not the version go.mod requires: update kfakeVersion in broker.go", b.Version)
	}
	if got, ok := ParseBroker(b.String()); !ok || got.String() != b.String() {
		t.Errorf("ParseBroker(%q) = %+v, %v", b.String(), got, ok)
	}
	a := Broker{Kind: BrokerApache, Version: "4.4.0", Java: `openjdk version "17.0.2" (Debian)`, JVMFlags: []string{"-Xmx1g", "-Xms1g"}}
	if a.String() != "apache 4.4.0" || a.Runtime() != `openjdk version "17.0.2" (Debian) -Xmx1g -Xms1g` {
		t.Errorf("%q, %q", a.String(), a.Runtime())
	}
	e := Broker{Kind: BrokerExisting, Version: "v4.0", VersionGuessed: true, ClusterID: "c1", BrokerIDs: []int32{1, 2}}
	if e.String() != "existing v4.0 (guessed from ApiVersions)" || e.Runtime() != "" {
		t.Errorf("%q, %q", e.String(), e.Runtime())
	}
	for _, s := range []string{"", "Apache Kafka 3.9.1", "embedded (kfake)", "apache"} {
		if _, ok := ParseBroker(s); ok {
			t.Errorf("ParseBroker(%q) accepted", s)
		}
	}
}
