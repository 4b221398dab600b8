package analysis

import (
	"encoding/json"
	"testing"
)

func TestGatewayCryptoFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, env           string
		layer, cipher, kept string
	}{
		{"gateway row", `{"mode":"encrypt.fast","gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"aesgcm-vaes","tls_kept":{}}}`, "tlsrec", "aesgcm-vaes", ""},
		{"fallback recorded", `{"gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"crypto/cipher","fallback":"cipher: this CPU lacks VAES","tls_kept":{}}}`, "tlsrec", "crypto/cipher", ""},
		{"legs kept", `{"gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"aesgcm-vaes","tls_kept":{"upstream":{"untested_go":2},"client":{"sent_under_keys":1,"not_tls13_aesgcm":3}}}}`,
			"tlsrec+crypto/tls", "aesgcm-vaes", "client:not_tls13_aesgcm=3;client:sent_under_keys=1;upstream:untested_go=2"},
		{"zero counts are none", `{"gateway_crypto":{"record_layer":"tlsrec","cipher":"aesgcm-vaes","tls_kept":{"client":{"no_secrets":0}}}}`, "tlsrec", "aesgcm-vaes", ""},
		{"not counted by the target", `{"gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"aesgcm-vaes"}}`, "tlsrec", "aesgcm-vaes", TLSKeptNotCounted},
		{"reading failed", `{"gateway_crypto":{"record_layer":"tlsrec","cipher":"aesgcm-vaes","tls_kept_error":"connection refused"}}`, "tlsrec", "aesgcm-vaes", TLSKeptNotCounted},
		{"std gateway", `{"gateway_crypto":{"requested":"std","record_layer":"crypto/tls","cipher":"crypto/cipher"}}`, "crypto/tls", "crypto/cipher", ""},
		{"direct row", `{"mode":"plaintext"}`, "", "", ""},
		{"attempt from before the field", `{}`, "", "", ""},
		{"not JSON", `{`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c, k := gatewayCrypto(json.RawMessage(tc.env))
			if l != tc.layer || c != tc.cipher || k != tc.kept {
				t.Errorf("gatewayCrypto = %q, %q, %q; want %q, %q, %q", l, c, k, tc.layer, tc.cipher, tc.kept)
			}
		})
	}
}
