package runner

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestClientRecordedInEveryAttempt: a campaign crossing client runs each
// row on its client, and every attempt's environment names the client
// with its version and runtime: franz-go with its module version and the
// Go release, java with kafka-clients' version and the JVM with its flags,
// librdkafka with its version and how its release was built.
func TestClientRecordedInEveryAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	spec := smallSpec("clients", []string{"plaintext", "tls"}, 1) + "  client: java\n"
	spec = strings.Replace(spec, "factors:\n", "factors:\n  client: [franz-go, java, librdkafka]\n", 1)
	spec = strings.Replace(spec, "  client: java\n", "", 1)
	plan := writePlan(t, dir, "clients", spec)
	var stderr syncBuffer
	_, err := Run(ctx, Options{Platforms: localPlatforms, Plan: plan, Stderr: &stderr,
		JavaClient: disttest.JavaClient(t).Path, RdkafkaClient: disttest.RdkafkaClient(t).Path, JVMOpts: []string{"-Xmx256m"},
		WarmupCap: noWarmup})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	s, err := results.OpenReadOnly(ctx, DefaultDB(plan))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	atts, _ := s.Attempts(ctx)
	seen := map[string]int{}
	for _, a := range atts {
		var env struct {
			Mode   string
			Client *loadgen.ClientInfo
		}
		json.Unmarshal(a.Environment, &env)
		if a.Outcome != results.OutcomeDone || a.Metrics["errors"] != 0 {
			t.Errorf("%s: %s %v %s", a.Run, a.Outcome, a.Reasons, a.Error)
		}
		c := env.Client
		if c == nil {
			t.Errorf("%s: no client in the environment %s", a.Run, a.Environment)
			continue
		}
		seen[c.Name]++
		switch c.Name {
		case planner.ClientFranzGo:
			if !strings.HasPrefix(c.Version, "franz-go v") || !strings.Contains(c.Runtime, "go1.") {
				t.Errorf("%s: client %+v, want franz-go's module version and the Go release", a.Run, c)
			}
		case planner.ClientJava:
			if !strings.HasPrefix(c.Version, "kafka-clients ") || !strings.Contains(c.Runtime, "flags: -Xmx256m") {
				t.Errorf("%s: client %+v, want kafka-clients' version and the JVM with its flags", a.Run, c)
			}
		case planner.ClientLibrdkafka:
			if !strings.HasPrefix(c.Version, "librdkafka 2.") || !strings.Contains(c.Runtime, "make rdkafka-client") {
				t.Errorf("%s: client %+v, want librdkafka's version and how its release was built", a.Run, c)
			}
		default:
			t.Errorf("%s: client %q", a.Run, c.Name)
		}
	}
	if seen[planner.ClientFranzGo] != 2 || seen[planner.ClientJava] != 2 || seen[planner.ClientLibrdkafka] != 2 {
		t.Errorf("attempts by client %v, want 2 of each", seen)
	}
}
