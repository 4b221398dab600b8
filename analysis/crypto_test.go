package analysis

import (
	"encoding/json"
	"testing"
)

func TestGatewayCryptoFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, env     string
		layer, cipher string
	}{
		{"gateway row", `{"mode":"encrypt.fast","gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"aesgcm-vaes"}}`, "tlsrec", "aesgcm-vaes"},
		{"fallback recorded", `{"gateway_crypto":{"requested":"fast","record_layer":"tlsrec","cipher":"crypto/cipher","fallback":"cipher: this CPU lacks VAES"}}`, "tlsrec", "crypto/cipher"},
		{"direct row", `{"mode":"plaintext"}`, "", ""},
		{"attempt from before the field", `{}`, "", ""},
		{"not JSON", `{`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, c := gatewayCrypto(json.RawMessage(tc.env))
			if l != tc.layer || c != tc.cipher {
				t.Errorf("gatewayCrypto = %q, %q; want %q, %q", l, c, tc.layer, tc.cipher)
			}
		})
	}
}
