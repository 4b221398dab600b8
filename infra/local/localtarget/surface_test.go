package localtarget

import (
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestServesSurface: what the local target serves of the security
// surface on Apache Kafka and on the embedded cluster, and the field each
// refusal names.
func TestServesSurface(t *testing.T) {
	row := func(edit func(*planner.Row)) *planner.Row {
		r := &planner.Row{Security: planner.SecuritySASLSSL, GatewayKind: planner.GatewayKindBuiltin, GatewayTransport: planner.SecurityTLS,
			InterBrokerSecurity: planner.SecurityPlaintext, SASLMechanism: planner.SASLScramSHA512, Authorizer: planner.AuthorizerNone,
			TLSVersion: planner.TLSDefault, TLSCipher: planner.TLSDefault, TLSKey: planner.TLSKeyECDSAP256}
		edit(r)
		return r
	}
	for _, tc := range []struct {
		name        string
		row         *planner.Row
		apache      bool
		wantRefusal string // "" serves
	}{
		{"defaults", row(func(*planner.Row) {}), false, ""},
		{"churn on kfake", row(func(r *planner.Row) { r.ConnectionChurn = 100 }), false, ""},
		{"plain on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLPlain }), false, ""},
		{"scram-sha-256 on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLScramSHA256 }), true, ""},
		{"scram-sha-256 on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLScramSHA256 }), false, "sasl_mechanism scram-sha-256"},
		{"oauthbearer on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), true, ""},
		{"gssapi on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), true, ""},
		{"oauthbearer on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), false, "sasl_mechanism oauthbearer: the embedded cluster"},
		{"gssapi on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), false, "sasl_mechanism gssapi: the embedded cluster"},
		{"gssapi through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLGSSAPI
		}), true, "sasl_mechanism gssapi on a gateway row"},
		{"1.2 chacha20 on kfake", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion12, planner.TLSCipherChaCha20 }), false, ""},
		{"1.3 chacha20 on kafka", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), true, ""},
		{"1.3 chacha20 on kfake", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), false, "tls_cipher chacha20-poly1305 with tls_version 1.3"},
		{"inter-broker tls on kafka", row(func(r *planner.Row) { r.InterBrokerSecurity = planner.SecurityTLS }), true, ""},
		{"inter-broker mtls through the gateway", row(func(r *planner.Row) {
			r.Security, r.InterBrokerSecurity = planner.SecurityProxy, planner.SecurityMTLS
		}), true, ""},
		{"inter-broker tls on kfake", row(func(r *planner.Row) { r.InterBrokerSecurity = planner.SecurityTLS }), false, "inter_broker_security tls: the embedded cluster"},
		{"authorizer on kafka sasl_ssl", row(func(r *planner.Row) { r.Authorizer, r.ACLs = planner.AuthorizerACL, 10 }), true, ""},
		{"authorizer on kafka mtls", row(func(r *planner.Row) {
			r.Security, r.Authorizer, r.ACLs = planner.SecurityMTLS, planner.AuthorizerACL, 10
		}), true, ""},
		{"authorizer on kafka tls", row(func(r *planner.Row) { r.Security, r.Authorizer = planner.SecurityTLS, planner.AuthorizerACL }), true, "authorizer acl with security tls"},
		{"authorizer through the gateway", row(func(r *planner.Row) { r.Security, r.Authorizer = planner.SecurityProxy, planner.AuthorizerACL }), true, "authorizer acl with security proxy"},
		{"authorizer on kfake", row(func(r *planner.Row) { r.Authorizer, r.ACLs = planner.AuthorizerACL, 10 }), false, "authorizer acl: the embedded cluster"},
		{"rsa key on kafka", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA4096 }), true, ""},
		{"rsa key on kfake", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA2048 }), false, "tls_key rsa2048"},
		{"plain through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL, planner.SASLPlain
		}), true, "gateway_kind kroxylicious"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := servesSurface(tc.row, tc.apache)
			switch {
			case tc.wantRefusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.wantRefusal != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantRefusal) && !strings.Contains(err.Error(), tc.wantRefusal)):
				t.Errorf("got %v, want a refusal naming %q", err, tc.wantRefusal)
			}
		})
	}
}
