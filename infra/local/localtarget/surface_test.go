package localtarget

import (
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestServesSurface: what the local target serves of the security
// surface on Apache Kafka and on the embedded cluster, direct and through
// each gateway, and the field and reason each refusal names.
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
		{"scram-sha-256 on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLScramSHA256 }), false, ""},
		{"scram-sha-256 through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport = planner.SecurityProxy, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLScramSHA256
		}), true, ""},
		{"scram-sha-256 through kroxylicious on kfake", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLScramSHA256
		}), false, ""},
		{"plain through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLPlain
		}), true, ""},
		{"oauthbearer on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), true, ""},
		{"gssapi on kafka", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), true, ""},
		{"oauthbearer on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLOAuthBearer }), false, "sasl_mechanism oauthbearer: the embedded cluster"},
		{"gssapi on kfake", row(func(r *planner.Row) { r.SASLMechanism = planner.SASLGSSAPI }), false, "sasl_mechanism gssapi: the embedded cluster"},
		{"oauthbearer through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport = planner.SecurityProxy, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLOAuthBearer
		}), true, ""},
		{"gssapi through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.SASLMechanism = planner.SecurityProxy, planner.SecuritySASLSSL, planner.SASLGSSAPI
		}), true, "sasl_mechanism gssapi on a gateway row: a Kerberos client asks for a ticket to kafka/<the host it connects to>"},
		{"gssapi through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLGSSAPI
		}), true,
			"sasl_mechanism gssapi on a gateway row"},
		{"oauthbearer through kroxylicious", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.SASLMechanism = planner.SASLOAuthBearer
		}), true, ""},
		{"1.2 chacha20 on kfake", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion12, planner.TLSCipherChaCha20 }), false, ""},
		{"1.3 chacha20 on kafka", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), true, ""},
		{"1.3 chacha20 on kfake", row(func(r *planner.Row) { r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }), false, "tls_cipher chacha20-poly1305 with tls_version 1.3"},
		{"1.2 chacha20 through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport = planner.SecurityProxy, planner.SecuritySASLSSL
			r.TLSVersion, r.TLSCipher = planner.TLSVersion12, planner.TLSCipherChaCha20
		}), false, ""},
		{"1.3 aes256 through the gateway", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport = planner.SecurityProxy, planner.SecuritySASLSSL
			r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherAES256GCM
		}), true, "tls_cipher aes256-gcm with tls_version 1.3 through xp's gateway: its listener is Go's crypto/tls"},
		{"1.3 aes256 through kroxylicious on kfake", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.TLSVersion, r.TLSCipher = planner.TLSVersion13, planner.TLSCipherAES256GCM
		}), false, ""},
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
		{"authorizer through the gateway over sasl_ssl", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport = planner.SecurityProxy, planner.SecuritySASLSSL
			r.Authorizer, r.ACLs = planner.AuthorizerACL, 10
		}), true, ""},
		{"authorizer through kroxylicious over sasl_ssl", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.Authorizer, r.ACLs = planner.AuthorizerACL, 10
		}), true, ""},
		{"authorizer through the gateway over tls", row(func(r *planner.Row) { r.Security, r.Authorizer = planner.SecurityProxy, planner.AuthorizerACL }), true,
			"authorizer acl with security proxy and gateway_transport tls"},
		{"authorizer through the gateway over mtls", row(func(r *planner.Row) {
			r.Security, r.GatewayTransport, r.Authorizer = planner.SecurityProxy, planner.SecurityMTLS, planner.AuthorizerACL
		}), true, "gateway_transport mtls: through a gateway only sasl_ssl clients keep an identity"},
		{"authorizer on kfake", row(func(r *planner.Row) { r.Authorizer, r.ACLs = planner.AuthorizerACL, 10 }), false, "authorizer acl: the embedded cluster"},
		{"rsa key on kafka", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA4096 }), true, ""},
		{"rsa key on kfake", row(func(r *planner.Row) { r.TLSKey = planner.TLSKeyRSA2048 }), false, "tls_key rsa2048: the embedded cluster's listeners serve ecdsa-p256"},
		{"rsa key through the gateway on kafka", row(func(r *planner.Row) { r.Security, r.TLSKey = planner.SecurityProxy, planner.TLSKeyRSA4096 }), true, ""},
		{"rsa key through the gateway on kfake", row(func(r *planner.Row) { r.Security, r.TLSKey = planner.SecurityProxy, planner.TLSKeyRSA2048 }), false, ""},
		{"rsa key through kroxylicious on kfake", row(func(r *planner.Row) {
			r.Security, r.GatewayKind, r.GatewayTransport = planner.SecurityProxy, planner.GatewayKindKroxylicious, planner.SecuritySASLSSL
			r.TLSKey = planner.TLSKeyRSA2048
		}), false, ""},
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
