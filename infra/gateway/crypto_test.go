package gateway

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/tls"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/internal/aesgcm"
	"github.com/xp-bench/xp/planner"
)

func TestResolveCrypto(t *testing.T) {
	vaes := aesgcm.Accelerated()
	fastCipher, fastWhy := CipherStd, "cipher: this CPU lacks VAES/VPCLMULQDQ/AVX-512"
	if vaes {
		fastCipher, fastWhy = CipherVAES, ""
	}
	for _, tc := range []struct {
		name             string
		crypto           string
		client, upstream string
		env              string
		want             CryptoInfo
		wantErr          string
	}{
		{"std over tls", planner.GatewayCryptoStd, planner.SecurityTLS, planner.SecurityTLS, "", CryptoInfo{Requested: planner.GatewayCryptoStd, RecordLayer: RecordLayerCryptoTLS, Cipher: CipherStd}, ""},
		{"std, plaintext legs", planner.GatewayCryptoStd, planner.SecurityPlaintext, planner.SecurityPlaintext, "", CryptoInfo{Requested: planner.GatewayCryptoStd, RecordLayer: RecordLayerNone, Cipher: CipherStd}, ""},
		{"std ignores a valid XP_AESGCM", planner.GatewayCryptoStd, planner.SecurityTLS, planner.SecurityTLS, "vaes", CryptoInfo{Requested: planner.GatewayCryptoStd, RecordLayer: RecordLayerCryptoTLS, Cipher: CipherStd}, ""},
		{"fast over tls", planner.GatewayCryptoFast, planner.SecurityTLS, planner.SecurityPlaintext, "", CryptoInfo{Requested: planner.GatewayCryptoFast, RecordLayer: RecordLayerTLSRec, Cipher: fastCipher, Fallback: fastWhy}, ""},
		{"fast, plaintext legs", planner.GatewayCryptoFast, planner.SecurityPlaintext, planner.SecurityPlaintext, "auto", CryptoInfo{Requested: planner.GatewayCryptoFast, RecordLayer: RecordLayerNone, Cipher: fastCipher, Fallback: fastWhy}, ""},
		{"fast with XP_AESGCM=std", planner.GatewayCryptoFast, planner.SecurityMTLS, planner.SecurityMTLS, "std", CryptoInfo{Requested: planner.GatewayCryptoFast, RecordLayer: RecordLayerTLSRec, Cipher: CipherStd, Fallback: "cipher: XP_AESGCM=std"}, ""},
		{"undocumented XP_AESGCM, std", planner.GatewayCryptoStd, planner.SecurityTLS, planner.SecurityTLS, "off", CryptoInfo{}, `XP_AESGCM="off": want auto, std or vaes`},
		{"undocumented XP_AESGCM, fast", planner.GatewayCryptoFast, planner.SecurityTLS, planner.SecurityTLS, "1", CryptoInfo{}, `XP_AESGCM="1": want auto, std or vaes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Crypto: tc.crypto, Client: Client{Transport: tc.client}, Upstream: Upstream{Transport: tc.upstream}}
			info, newAEAD, err := resolveCrypto(cfg, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info != tc.want {
				t.Errorf("info %+v\nwant %+v", info, tc.want)
			}
			a, err := newAEAD(make([]byte, 32))
			if err != nil {
				t.Fatal(err)
			}
			if got := cipherName(a); got != info.Cipher {
				t.Errorf("the AEAD handed out is %s, info says %s", got, info.Cipher)
			}
		})
	}
}

// cipherName tells the two AES-GCMs apart: only aesgcm's VAES one seals
// with a trailer.
func cipherName(a cipher.AEAD) string {
	if _, ok := a.(aesgcm.TrailerSealer); ok {
		return CipherVAES
	}
	return CipherStd
}

// Start refuses an undocumented XP_AESGCM and logs the crypto it runs.
func TestStartCrypto(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityTLS})
	t.Run("undocumented XP_AESGCM", func(t *testing.T) {
		cfg := gatewayConfig(t, kf, planner.SecurityTLS, planner.SecurityTLS)
		_, err := Start(context.Background(), cfg, WithGetenv(func(string) string { return "fast" }))
		if err == nil || !strings.Contains(err.Error(), `XP_AESGCM="fast"`) {
			t.Fatalf("Start: %v, want the XP_AESGCM error", err)
		}
	})
	for _, level := range []string{planner.GatewayCryptoStd, planner.GatewayCryptoFast} {
		t.Run("logs "+level, func(t *testing.T) {
			cfg := gatewayConfig(t, kf, planner.SecurityTLS, planner.SecurityTLS)
			cfg.Crypto = level
			var log bytes.Buffer
			g, err := Start(context.Background(), cfg, WithLogger(slog.New(slog.NewTextHandler(&log, nil))),
				WithGetenv(func(string) string { return "" }))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			info := g.Crypto()
			want := "msg=\"gateway crypto\" requested=" + level + " record_layer=" + info.RecordLayer + " cipher=" + info.Cipher
			if info.Requested != level || !strings.Contains(log.String(), want) {
				t.Errorf("info %+v; log %q lacks %q", info, log.String(), want)
			}
		})
	}
}

// A crypto fast gateway leaves a TLS 1.2 client's leg to crypto/tls, counts
// it in xp_gateway_tls_kept_total and still relays it; TLS 1.3 clients'
// legs are tlsrec's and not counted.
func TestFastKeepsTLS12WithCryptoTLS(t *testing.T) {
	kf := startUpstream(t, upstreamSpec{brokers: 1, transport: planner.SecurityTLS})
	cfg := gatewayConfig(t, kf, planner.SecurityTLS, planner.SecurityTLS)
	cfg.Crypto = planner.GatewayCryptoFast
	g := startGateway(t, cfg)
	kept := func() TLSKept {
		k, err := ReadTLSKept(context.Background(), g.MetricsURL())
		if err != nil {
			t.Fatal(err)
		}
		if mem := g.TLSKept(); !reflect.DeepEqual(k, mem) {
			t.Fatalf("metrics endpoint %v, Gateway.TLSKept %v", k, mem)
		}
		return k
	}
	produce(t, franzOpts(t, []string{g.Bootstrap()}, planner.SecurityTLS), "roundtrip", 5)
	if k := kept(); len(k) != 0 {
		t.Fatalf("after TLS 1.3 clients: kept %v, want none", k)
	}
	tls12 := clientTLS(t, planner.SecurityTLS)
	tls12.MaxVersion = tls.VersionTLS12
	opts := []kgo.Opt{kgo.SeedBrokers(g.Bootstrap()), kgo.DialTLSConfig(tls12), kgo.RetryTimeout(20 * time.Second)}
	produce(t, opts, "compressed", 5)
	if got := consume(t, opts, "compressed", 5); len(got) != 5 {
		t.Fatalf("consumed %d records over TLS 1.2, want 5", len(got))
	}
	// Only the client legs: the gateway's own legs to the broker are TLS
	// 1.3 and tlsrec's.
	k := kept()
	if n := k[LegClient]["not_tls13_aesgcm"]; n < 1 || k.Total() != n {
		t.Fatalf("after TLS 1.2 clients: kept %v, want client:not_tls13_aesgcm >= 1 and nothing else", k)
	}
}
