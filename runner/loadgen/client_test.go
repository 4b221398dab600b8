package loadgen

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// TestFranzGoInfo: the Go client names franz-go at the module version
// go.mod requires (test binaries carry no module list, so this checks the
// fallback franzGoVersion too) and the Go release it runs on.
func TestFranzGoInfo(t *testing.T) {
	c := franzGoInfo()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimPrefix(c.Version, "franz-go ")
	if c.Name != planner.ClientFranzGo || !strings.Contains(string(mod), franzGoModule+" "+v+"\n") {
		t.Errorf("%+v: want franz-go at go.mod's version (update franzGoVersion in result.go)", c)
	}
	if !strings.HasPrefix(c.Runtime, "go1.") || !strings.Contains(c.Runtime, "GOMAXPROCS") {
		t.Errorf("runtime %q: want the Go release and GOMAXPROCS", c.Runtime)
	}
}

// TestValidateClient: the client is one xp runs; java and librdkafka
// need their releases.
func TestValidateClient(t *testing.T) {
	base := Config{Bootstrap: []string{"127.0.0.1:9"}, ClientConfig: map[string]string{}}
	tests := []struct {
		name, client, javaClient, want string
		mechanism                      string
	}{
		{"franz-go", planner.ClientFranzGo, "", "", ""},
		{"default", "", "", "", ""},
		{"java", planner.ClientJava, "out/dist/xp-java-client-4.4.0.tgz", "", ""},
		{"java without its release", planner.ClientJava, "", "--client java needs --java-client", ""},
		{"librdkafka without its release", planner.ClientLibrdkafka, "", "--client librdkafka needs --rdkafka-client", ""},
		{"unknown", "sarama", "", `--client "sarama": want franz-go, java or librdkafka`, ""},
		{"java at the default mechanism", planner.ClientJava, "out/dist/xp-java-client-4.4.0.tgz", "", planner.SASLScramSHA512},
		{"java with another mechanism", planner.ClientJava, "out/dist/xp-java-client-4.4.0.tgz", "", planner.SASLPlain},
		{"java with an unknown mechanism", planner.ClientJava, "out/dist/xp-java-client-4.4.0.tgz", `--sasl-mechanism "scram-sha-1"`, "scram-sha-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Client, c.JavaClient, c.SASLMechanism = tc.client, tc.javaClient, tc.mechanism
			err := c.WithDefaults().Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDefaultJVMOpts: client java gets DefaultJVMOpts when a run gives
// no JVM flags, a run's own flags replace them whole, and the other
// clients get none.
func TestDefaultJVMOpts(t *testing.T) {
	tests := []struct {
		name, client string
		opts, want   []string
	}{
		{"java, none given", planner.ClientJava, nil, DefaultJVMOpts},
		{"java, its own", planner.ClientJava, []string{"-Xmx512m"}, []string{"-Xmx512m"}},
		{"franz-go", planner.ClientFranzGo, nil, nil},
		{"librdkafka", planner.ClientLibrdkafka, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Config{Client: tc.client, JVMOpts: tc.opts}.WithDefaults().JVMOpts
			if !slices.Equal(got, tc.want) {
				t.Errorf("JVM flags %q, want %q", got, tc.want)
			}
		})
	}
	if !slices.Contains(DefaultJVMOpts, "-XX:+UseG1GC") || !slices.Contains(DefaultJVMOpts, "-XX:G1HeapRegionSize=16m") {
		t.Errorf("DefaultJVMOpts %q: want G1 named and regions that keep fetch buffers out of humongous allocation", DefaultJVMOpts)
	}
}

// TestJavaClientInterrupted: an interrupt during the measurement ends a
// client java run early, as it ends a franz-go one: the JVM is told (its
// input closes), stops sending, reports what it counted, and Run returns
// that partial result with the context's error, long before the window
// would have closed.
func TestJavaClientInterrupted(t *testing.T) {
	c := cluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Client, cfg.JavaClient, cfg.CacheDir = planner.ClientJava, disttest.JavaClient(t).Path, t.TempDir()
	cfg.Rate, cfg.Warmup, cfg.Duration = 200, 0, 5*time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var phases []string
	cfg.OnPhase = func(phase string, _ time.Time) {
		phases = append(phases, phase)
		if phase == "measure" {
			cancel()
		}
	}
	start := time.Now()
	res, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run: %v (result %v), want the partial result and context.Canceled", err, res != nil)
	}
	if took := time.Since(start); took > 2*time.Minute {
		t.Errorf("the interrupted run took %v", took)
	}
	if res.Client.Name != planner.ClientJava || res.Healthy {
		t.Errorf("client %q healthy %v: want java's partial, unhealthy result", res.Client.Name, res.Healthy)
	}
	// No flags given: the JVM ran with the defaults, and says so.
	if want := "flags: " + strings.Join(DefaultJVMOpts, " "); !strings.Contains(res.Client.Runtime, want) {
		t.Errorf("runtime %q: want %q", res.Client.Runtime, want)
	}
	if len(phases) == 0 || phases[0] != "measure" || slices.Contains(phases, "done") {
		t.Errorf("phases %v: want measure and no done", phases)
	}
}
