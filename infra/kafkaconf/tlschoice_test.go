package kafkaconf

import (
	"crypto/tls"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
)

// TestTLSChoice: every tls_version and tls_cipher level narrows a Go
// client as far as crypto/tls allows, names suites Go knows (Kafka's
// ssl.cipher.suites takes the same IANA names), and Check tells a
// negotiated suite that is not the one asked.
func TestTLSChoice(t *testing.T) {
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		known[s.Name] = s.ID
	}
	for _, s := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		known[tls.CipherSuiteName(s)] = s
	}
	for _, v := range []string{planner.TLSVersion12, planner.TLSVersion13} {
		for _, c := range []string{planner.TLSCipherAES128GCM, planner.TLSCipherAES256GCM, planner.TLSCipherChaCha20} {
			ch := TLSChoice{Version: v, Cipher: c}
			names := ch.CipherSuites()
			if len(names) == 0 {
				t.Fatalf("%+v: no suites", ch)
			}
			for _, n := range names {
				if known[n] == 0 {
					t.Errorf("%+v: %s is not a suite Go knows", ch, n)
				}
			}
			cfg := &tls.Config{}
			if err := ch.apply(cfg); err != nil {
				t.Fatal(err)
			}
			if v == planner.TLSVersion12 && len(cfg.CipherSuites) != 2 {
				t.Errorf("%+v: client suites %v, want the RSA and ECDSA one", ch, cfg.CipherSuites)
			}
			if got := ch.Check(tls.ConnectionState{Version: cfg.MaxVersion, CipherSuite: known[names[0]]}); got != "" {
				t.Errorf("%+v: Check of its own suite: %s", ch, got)
			}
			other := tls.TLS_AES_128_GCM_SHA256
			if c == planner.TLSCipherAES128GCM {
				other = tls.TLS_AES_256_GCM_SHA384
			}
			if got := ch.Check(tls.ConnectionState{Version: cfg.MaxVersion, CipherSuite: other}); !strings.Contains(got, "tls_cipher is "+c) {
				t.Errorf("%+v: Check of another suite: %q", ch, got)
			}
		}
	}
	if err := (TLSChoice{Cipher: planner.TLSCipherChaCha20}).apply(&tls.Config{}); err == nil {
		t.Error("a cipher without a version was applied")
	}
	if got := (TLSChoice{Version: planner.TLSVersion12}).Check(tls.ConnectionState{Version: tls.VersionTLS13}); !strings.Contains(got, "tls_version is 1.2") {
		t.Errorf("Check of TLS 1.3 against 1.2: %q", got)
	}
	if _, err := ClientOptsChoosing(map[string]string{SecurityProtocol: "plaintext"}, TLSChoice{Version: planner.TLSVersion13}, ""); err == nil {
		t.Error("a TLS version on a plaintext connection was accepted")
	}
	if !slices.Equal((TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherChaCha20}).CipherSuites(), []string{"TLS_CHACHA20_POLY1305_SHA256"}) {
		t.Error("TLS 1.3 ChaCha20 suite")
	}
}

// TestJavaTLSChoice: a Java client is narrowed by the same levels through
// JSSE's properties (which take the IANA names CipherSuites gives), and
// an open choice sets none of them.
func TestJavaTLSChoice(t *testing.T) {
	for _, tc := range []struct {
		choice TLSChoice
		want   map[string]string
	}{
		{TLSChoice{}, map[string]string{}},
		{TLSChoice{Version: planner.TLSDefault, Cipher: planner.TLSDefault}, map[string]string{}},
		{TLSChoice{Version: planner.TLSVersion12}, map[string]string{"ssl.enabled.protocols": "TLSv1.2", "ssl.protocol": "TLSv1.2"}},
		{TLSChoice{Version: planner.TLSVersion12, Cipher: planner.TLSCipherChaCha20}, map[string]string{"ssl.enabled.protocols": "TLSv1.2", "ssl.protocol": "TLSv1.2",
			"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"}},
		{TLSChoice{Version: planner.TLSVersion13, Cipher: planner.TLSCipherAES256GCM}, map[string]string{"ssl.enabled.protocols": "TLSv1.3", "ssl.protocol": "TLSv1.3",
			"ssl.cipher.suites": "TLS_AES_256_GCM_SHA384"}},
	} {
		if got := tc.choice.JavaProperties(); !maps.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.choice, got, tc.want)
		}
	}
}
