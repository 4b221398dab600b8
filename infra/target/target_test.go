package target

import (
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ModeKey(&tc.row); got != tc.want {
				t.Fatalf("%q, want %q", got, tc.want)
			}
		})
	}
}
