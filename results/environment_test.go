package results

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FinishAttempt replaces the environment recorded at the start with the
// evidence's, when it has one, and refuses one that is not a JSON object
// without recording anything of the attempt's end.
func TestFinishAttemptEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name, env, want, err string
	}{
		{"kept from the start", "", `{"mode":"proxy.fast"}`, ""},
		{"replaced", `{"mode":"proxy.fast","gateway_crypto":{"tls_kept":{"client":{"not_tls13_aesgcm":2}}}}`,
			`{"mode":"proxy.fast","gateway_crypto":{"tls_kept":{"client":{"not_tls13_aesgcm":2}}}}`, ""},
		{"not JSON", `{"mode":`, `{"mode":"proxy.fast"}`, "not a JSON object"},
		{"not an object", `[1]`, `{"mode":"proxy.fast"}`, "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := newStore(t)
			if _, err := s.Register(ctx, testCampaign("p"), testRows(1)); err != nil {
				t.Fatal(err)
			}
			a, err := s.StartAttempt(ctx, "cell00-r1", time.Now(), json.RawMessage(`{"mode":"proxy.fast"}`))
			if err != nil {
				t.Fatal(err)
			}
			err = s.FinishAttempt(ctx, a.ID, Evidence{Outcome: OutcomeDone, Environment: json.RawMessage(tc.env)})
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("FinishAttempt: %v, want error %q", err, tc.err)
			}
			atts, err := s.Attempts(ctx)
			if err != nil || len(atts) != 1 {
				t.Fatalf("attempts %v, %v", atts, err)
			}
			if got := string(atts[0].Environment); got != tc.want {
				t.Errorf("environment %s, want %s", got, tc.want)
			}
			wantOutcome := OutcomeDone
			if tc.err != "" {
				wantOutcome = "" // still running: the failed finish left nothing
			}
			if atts[0].Outcome != wantOutcome {
				t.Errorf("outcome %q, want %q", atts[0].Outcome, wantOutcome)
			}
		})
	}
}
