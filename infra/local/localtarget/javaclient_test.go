package localtarget

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestJavaClientOnApacheKafka: xp's external load generators, in Java
// (client java, the release make java-client assembles) and in C on
// librdkafka (client librdkafka, make rdkafka-client's), each produce and
// consume on Apache Kafka in every direct mode (sasl_ssl with
// SCRAM-SHA-512, which Debian's librdkafka 2.0.2 fails against Kafka 4)
// and through the builtin gateway (proxy), and their results pass the
// checks franz-go's do: healthy, every record consumed once by its group
// with its digest intact, no errors, a series second by second, the
// histograms counting every measured record; and the histograms of each
// and franz-go decode into one merge whose count is the sum of theirs
// (the encodings are one).
func TestJavaClientOnApacheKafka(t *testing.T) {
	rel := disttest.Kafka(t, 4)
	jc := disttest.JavaClient(t)
	rk := disttest.RdkafkaClient(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	tg, err := openFile(t, dir, fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n  heap: 384m\n", rel.Path, rel.SHA512),
		testEnv(cache, nil))
	if err != nil {
		t.Fatal(err)
	}
	lt := tg.(*Target)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	defer lt.Down(context.Background())
	rows := []planner.Row{{Security: planner.SecurityPlaintext, Brokers: 1, KafkaVersion: rel.Version},
		{Security: planner.SecurityProxy, Brokers: 1, KafkaVersion: rel.Version, Gateways: 1, GatewayTransport: planner.SecurityTLS}}
	for i := range rows {
		if err := lt.CheckRow(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	ep, err := lt.Up(ctx, target.Group{Key: rows[0].InfraKey(), Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	load := func(t *testing.T, client, mode string) *loadgen.Result {
		t.Helper()
		e, ok := ep.Modes[mode]
		if !ok {
			t.Fatalf("no endpoint for mode %s", mode)
		}
		props, err := kafkaconf.ReadClientConfig(e.ClientConfig)
		if err != nil {
			t.Fatal(err)
		}
		res, err := loadgen.Run(ctx, loadgen.Config{Bootstrap: e.Bootstrap, ClientConfig: props, Mode: mode,
			Client: client, JavaClient: jc.Path, RdkafkaClient: rk.Path, CacheDir: cache, Partitions: 3, Rate: 400, ConsumerGroups: 1, Encoding: loadgen.EncodingJSON,
			Warmup: time.Second, Duration: 2 * time.Second, DrainTimeout: 20 * time.Second, Seed: 7})
		if err != nil {
			t.Fatalf("%s on %s: %v", client, mode, err)
		}
		// The run's consumer group is gone with its topic.
		opts, err := kafkaconf.ClientOpts(props)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(e.Bootstrap...))...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		gs, err := kadm.NewClient(cl).ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs.Groups() {
			if strings.HasPrefix(g, res.Config.Topic+"-g") {
				t.Errorf("%s on %s left consumer group %s (warnings %v)", client, mode, g, res.Warnings)
			}
		}
		return res
	}
	check := func(t *testing.T, client string, res *loadgen.Result) {
		t.Helper()
		if !res.Healthy || res.Errors != 0 || len(res.ErrorSamples) > 0 {
			t.Errorf("unhealthy: %v, %d errors %v", res.Reasons, res.Errors, res.ErrorSamples)
		}
		if res.Published != 800 || res.Consumed != res.Published || res.Duplicates != 0 {
			t.Errorf("published %d, consumed %d, duplicates %d: want 800, 800, 0", res.Published, res.Consumed, res.Duplicates)
		}
		if res.Client.Name != client || res.Client.Version == "" || res.Client.Runtime == "" || res.Config.Client != client {
			t.Errorf("client %+v, config's %q: want %s with its version and runtime", res.Client, res.Config.Client, client)
		}
		// The open loop's pacer got the Go pacer's scheduling (all of it
		// as root; the short slice needs no privilege) and timer slack.
		want := loadgen.PacerNiceSlice
		if os.Geteuid() != 0 {
			want = loadgen.PacerSlice
		}
		if want += "; timer slack 1 ns"; res.Config.PacerPriority != want {
			t.Errorf("pacer priority %q, want %q", res.Config.PacerPriority, want)
		}
		// The pacer measured its own scheduling over the window: about a
		// turn on a CPU per record at this rate (a sleep before each).
		if sc := res.Scheduling; sc == nil || sc.Pacers != 1 || sc.PacerRuns < res.Published/4 || sc.PacerRuns > 3*res.Published ||
			sc.PacerWaitMs < 0 || sc.PacerWaitMs > 2000 || sc.StealPct < 0 || sc.StealPct > 100 {
			t.Errorf("scheduling %+v: want one pacer with about a turn per record of %d, a wait within the window, steal a share", sc, res.Published)
		}
		var perSecond int64
		for _, s := range res.Series[:2] {
			perSecond += s.Published
		}
		if len(res.Series) < 2 || perSecond == 0 {
			t.Errorf("series %+v: want the two measured seconds", res.Series)
		}
		if len(res.Intervals) != 2 {
			t.Errorf("%d per-second histograms, want 2", len(res.Intervals))
		}
		for kind, enc := range map[string]string{"publish": res.Histograms.Publish, "e2e": res.Histograms.E2E, "send_delay": res.Histograms.SendDelay} {
			h, err := hdrhistogram.Decode([]byte(enc))
			if err != nil {
				t.Fatalf("%s histogram: %v", kind, err)
			}
			if h.TotalCount() != 800 {
				t.Errorf("%s histogram counts %d, want 800", kind, h.TotalCount())
			}
		}
	}
	external := map[string]*loadgen.Result{}
	for _, client := range []string{planner.ClientJava, planner.ClientLibrdkafka} {
		for _, mode := range append(planner.DirectModes(), planner.SecurityProxy) {
			t.Run(client+"/"+mode, func(t *testing.T) {
				res := load(t, client, mode)
				check(t, client, res)
				if res.Config.Mode != mode {
					t.Errorf("mode %q, want %s", res.Config.Mode, mode)
				}
				external[client+"/"+mode] = res
			})
		}
	}
	var g *loadgen.Result
	for _, client := range []string{planner.ClientJava, planner.ClientLibrdkafka} {
		t.Run(client+" merges with franz-go", func(t *testing.T) {
			j := external[client+"/"+planner.SecurityTLS]
			if j == nil {
				t.Fatalf("no %s result of tls to merge: its run failed above", client)
			}
			if g == nil {
				g = load(t, planner.ClientFranzGo, planner.SecurityTLS)
				check(t, planner.ClientFranzGo, g)
			}
			merge(t, j, g)
		})
	}
}

// merge checks that the histograms of results j and g merge: whole-run
// and per-second, the merge counts both and keeps the larger maximum.
func merge(t *testing.T, j, g *loadgen.Result) {
	t.Helper()
	for _, pair := range [][2]string{{j.Histograms.Publish, g.Histograms.Publish}, {string(j.Intervals[0].E2E), string(g.Intervals[0].E2E)}} {
		a, err1 := hdrhistogram.Decode([]byte(pair[0]))
		b, err2 := hdrhistogram.Decode([]byte(pair[1]))
		if err1 != nil || err2 != nil {
			t.Fatalf("decode: %v, %v", err1, err2)
		}
		m := loadgen.NewHistogram()
		m.Merge(a)
		m.Merge(b)
		if m.TotalCount() != a.TotalCount()+b.TotalCount() || m.Max() < max(a.Max(), b.Max()) {
			t.Errorf("merge counts %d (max %d), want %d+%d (max %d, %d)", m.TotalCount(), m.Max(), a.TotalCount(), b.TotalCount(), a.Max(), b.Max())
		}
	}
}
