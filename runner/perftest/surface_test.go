package perftest

import (
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestSurfaceOrder: every round visits every case once, and a case that
// follows another in one round precedes it in the next, so a drift over
// the run adds to a setting in one round what it takes in the next.
func TestSurfaceOrder(t *testing.T) {
	for _, n := range []int{1, 2, 3, 24, 25} {
		var rounds [][]int
		for round := range 3 {
			o := surfaceOrder(n, round)
			s := slices.Clone(o)
			slices.Sort(s)
			for i, v := range s {
				if v != i {
					t.Fatalf("n %d round %d: order %v is not a permutation of 0..%d", n, round, o, n-1)
				}
			}
			rounds = append(rounds, o)
		}
		pos := func(o []int, v int) int { return slices.Index(o, v) }
		for r := 1; r < 3; r++ {
			for i := 0; i+1 < n; i++ {
				a, b := rounds[r-1][i], rounds[r-1][i+1]
				if pos(rounds[r], a)+1 == pos(rounds[r], b) {
					t.Errorf("n %d: %d then %d in round %d and again in round %d", n, a, b, r-1, r)
				}
			}
		}
	}
}

func TestSurfaceMismatch(t *testing.T) {
	cases := []struct {
		name  string
		c     surfaceCase
		conns *loadgen.Connections
		want  string // substring; empty: no mismatch
	}{
		{"as asked", surfaceCase{mech: planner.SASLOAuthBearer, churn: 100, key: planner.TLSKeyRSA2048},
			&loadgen.Connections{SASLMechanism: "OAUTHBEARER", TLSKey: "rsa2048", Handshakes: 30}, ""},
		{"no SASL asked", surfaceCase{}, &loadgen.Connections{TLSKey: "ecdsa-p256"}, ""},
		{"nothing recorded", surfaceCase{}, nil, "no connections"},
		{"another mechanism", surfaceCase{mech: planner.SASLGSSAPI}, &loadgen.Connections{SASLMechanism: "SCRAM-SHA-512"},
			"authenticated with SCRAM-SHA-512, want GSSAPI"},
		{"another key", surfaceCase{key: planner.TLSKeyRSA4096}, &loadgen.Connections{TLSKey: "rsa2048"}, "key rsa2048, want rsa4096"},
		{"churn without handshakes", surfaceCase{churn: 100}, &loadgen.Connections{}, "no handshake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := surfaceMismatch(c.c, c.conns)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Fatalf("surfaceMismatch = %q, want %q", got, c.want)
			}
		})
	}
}
