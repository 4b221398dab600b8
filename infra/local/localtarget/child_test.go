package localtarget

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
)

// TestChildErrors: a child that cannot serve its spec says why, and the
// parent reports it with the role, instead of waiting for a reply.
func TestChildErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		spec childSpec
		want string
	}{
		{"unknown role", childSpec{Role: "broker"}, `unknown role "broker"`},
		{"gateways without a cluster directory", childSpec{Role: roleGateways, Dir: t.TempDir(),
			Gateways: []childGateway{{Name: "proxy", Security: planner.SecurityProxy}}}, "not an embedded cluster's directory"},
		{"too many brokers", childSpec{Role: roleCluster, Brokers: 12}, "brokers 12: want 1..9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p, _, err := startChild(ctx, c.spec)
			if err == nil {
				p.stop()
				t.Fatalf("child started with spec %+v", c.spec)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "local target: ") {
				t.Errorf("error %q, want it to start with %q and name %q", err, "local target: ", c.want)
			}
		})
	}
}

// TestChildServesUntilStdinCloses: a cluster child answers with its modes,
// serves them, and ends when its stdin closes.
func TestChildServesUntilStdinCloses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, rep, err := startChild(ctx, childSpec{Role: roleCluster, Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Modes[planner.SecurityPlaintext]; !ok || rep.Dir == "" {
		t.Fatalf("reply %+v: want the plaintext mode and the directory", rep)
	}
	if err := p.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	default:
		t.Fatal("child still running after stop")
	}
}
