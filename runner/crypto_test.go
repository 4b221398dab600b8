package runner

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/internal/aesgcm"
	"github.com/xp-bench/xp/results"
)

// gateway_crypto reaches the gateway, std and fast rows run on gateways of
// their own, and each attempt records the gateway (xp's builtin, with the
// crypto asked for) and the record layer and cipher that ran.
func TestGatewayCryptoRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	spec := `campaign: gwc
seed: 7
treatment: security
baseline: plaintext
factors:
  security: [plaintext, encrypt]
  gateway_crypto: [std, fast]
fixed:
  platform: local
  brokers: 1
  partitions: 2
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 5
`
	plan := writePlan(t, dir, "gwc", spec)
	var stderr syncBuffer
	if _, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr, WarmupCap: noWarmup}); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, err := s.Attempts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fastCipher := gateway.CipherStd
	if aesgcm.Accelerated() {
		fastCipher = gateway.CipherVAES
	}
	want := map[string]*gateway.CryptoInfo{
		"plaintext":    nil,
		"encrypt":      {Requested: "std", RecordLayer: gateway.RecordLayerCryptoTLS, Cipher: gateway.CipherStd},
		"encrypt.fast": {Requested: "fast", RecordLayer: gateway.RecordLayerTLSRec, Cipher: fastCipher},
	}
	seen := map[string]bool{}
	for _, a := range atts {
		var env attemptEnv
		if err := json.Unmarshal(a.Environment, &env); err != nil {
			t.Fatal(err)
		}
		seen[env.Mode] = true
		if a.Outcome != results.OutcomeDone {
			t.Errorf("%s: %s %v %s", env.Mode, a.Outcome, a.Reasons, a.Error)
		}
		w, ok := want[env.Mode]
		if !ok {
			t.Errorf("unexpected mode %q", env.Mode)
			continue
		}
		if gw := env.Gateway; (w == nil) != (gw == nil) || gw != nil && (gw.Kind != "builtin" || gw.Crypto != w.Requested || gw.Version != "") {
			t.Errorf("%s: the attempt names the gateway %+v", env.Mode, gw)
		}
		got := env.GatewayCrypto
		switch {
		case w == nil && got != nil:
			t.Errorf("%s: direct row records gateway crypto %+v", env.Mode, *got)
		case w != nil && got == nil:
			t.Errorf("%s: no gateway_crypto in the attempt's environment %s", env.Mode, a.Environment)
		case w != nil && (got.Requested != w.Requested || got.RecordLayer != w.RecordLayer || got.Cipher != w.Cipher):
			t.Errorf("%s: gateway_crypto %+v, want %+v", env.Mode, *got, *w)
		}
	}
	for m := range want {
		if !seen[m] {
			t.Errorf("no attempt on %s (saw %v)", m, seen)
		}
	}
}
