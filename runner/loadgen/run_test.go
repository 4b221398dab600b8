package loadgen

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/planner"
)

var (
	sharedOnce    sync.Once
	sharedCluster *local.Cluster
	sharedErr     error
)

// cluster returns one embedded cluster shared by the tests that do not
// disturb it (calibration and fault tests start their own).
func cluster(t *testing.T) *local.Cluster {
	t.Helper()
	sharedOnce.Do(func() {
		sharedCluster, sharedErr = local.Start(context.Background(), local.Options{Brokers: 1})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedCluster
}

func props(t *testing.T, c *local.Cluster, mode string) map[string]string {
	t.Helper()
	p, err := kafkaconf.ReadClientConfig(c.Modes()[mode].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func quick(p map[string]string) Config {
	return Config{
		ClientConfig: p, Rate: 2000, Partitions: 3, LingerMs: 1, ConsumerGroups: 1,
		Warmup: time.Second, Duration: 3 * time.Second, DrainTimeout: 10 * time.Second, Seed: 1,
	}
}

// TestEveryModeHealthy runs each direct mode end to end at a modest rate.
func TestEveryModeHealthy(t *testing.T) {
	c := cluster(t)
	for _, mode := range planner.DirectModes() {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			var phases []string
			cfg := quick(props(t, c, mode))
			cfg.OnPhase = func(p string, _ time.Time) { phases = append(phases, p) }
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy {
				t.Fatalf("unhealthy: %v", res.Reasons)
			}
			if res.Published != 6000 || res.Consumed != res.Published {
				t.Fatalf("published %d consumed %d, want 6000 each", res.Published, res.Consumed)
			}
			if res.PublishLatencyMs.P50 <= 0 || res.E2ELatencyMs.P50 <= 0 || res.E2ELatencyMs.P50 < res.PublishLatencyMs.P50/10 {
				t.Fatalf("latencies not positive: publish %+v e2e %+v", res.PublishLatencyMs, res.E2ELatencyMs)
			}
			if res.Warmup.Published != 2000 {
				t.Errorf("warm-up published %d, want 2000", res.Warmup.Published)
			}
			if res.Config.Mode != mode {
				t.Errorf("config mode %q, want %q", res.Config.Mode, mode)
			}
			if got := strings.Join(phases, ","); got != "warmup,measure,drain,done" {
				t.Errorf("phases %s", got)
			}
			h, err := hdrhistogram.Decode([]byte(res.Histograms.Publish))
			if err != nil || h.TotalCount() != res.Published {
				t.Fatalf("publish histogram: %v, count %d", err, h.TotalCount())
			}
			if len(res.Intervals) != 3 {
				t.Fatalf("%d intervals, want 3", len(res.Intervals))
			}
			var sum int64
			for _, iv := range res.Intervals {
				h, err := hdrhistogram.Decode(iv.E2E)
				if err != nil {
					t.Fatal(err)
				}
				sum += h.TotalCount()
			}
			if sum != res.Consumed {
				t.Fatalf("per-second e2e counts sum to %d, want %d", sum, res.Consumed)
			}
			if strings.Contains(strings.Join(mapValues(res.Config.ClientConfig), " "), props(t, c, planner.SecuritySASLSSL)["sasl.password"]) {
				t.Fatal("SASL password echoed in config")
			}
		})
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

var _ = errors.New

// TestNoWarmup: a zero warm-up (a plan row's warmup_s: 0) means none, not
// the CLI's default.
func TestNoWarmup(t *testing.T) {
	c := cluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Warmup = 0
	cfg.Duration = 2 * time.Second
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || res.Warmup.Published != 0 || res.Published != 4000 {
		t.Fatalf("healthy %v (%v), warm-up published %d, published %d; want true, 0, 4000",
			res.Healthy, res.Reasons, res.Warmup.Published, res.Published)
	}
	if want := withSlack(pacerPriorityAllowed(t), pacerTimerSlack); res.Config.PacerPriority != want {
		t.Errorf("pacer priority %q, want %q (what this process may set)", res.Config.PacerPriority, want)
	}
	checkScheduling(t, res, 1)
}

// checkScheduling: a fixed-rate run of a few thousand records a second
// measured its pacers' scheduling over the window: about one turn on a
// CPU per record (a sleep before each), a wait within the window, and the
// host's steal as a share.
func checkScheduling(t *testing.T, res *Result, pacers int) {
	t.Helper()
	sc := res.Scheduling
	window := res.End.Sub(res.Start).Seconds() * 1000 * float64(pacers)
	if sc == nil || sc.Pacers != pacers || sc.PacerRuns < res.Published/4 || sc.PacerRuns > 3*res.Published ||
		sc.PacerWaitMs < 0 || sc.PacerWaitMs > window || sc.StealPct < 0 || sc.StealPct > 100 {
		t.Errorf("scheduling %+v: want %d pacers with about a turn per record of %d, a wait within %.0f ms, steal a share", sc, pacers, res.Published, window)
	}
	t.Logf("scheduling %+v, %d records", sc, res.Published)
}

// pacerPriorityAllowed probes, on a thread of its own, what scheduling
// this process may give a thread, independently of hintLatency.
func pacerPriorityAllowed(t *testing.T) string {
	t.Helper()
	out := make(chan string)
	go func() {
		runtime.LockOSThread() // the thread is discarded with the goroutine: nothing to restore
		a := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL, Runtime: 100_000, Nice: -10}
		if unix.SchedSetAttr(0, &a, 0) == nil {
			out <- PacerNiceSlice
			return
		}
		a.Nice = 0
		if unix.SchedSetAttr(0, &a, 0) == nil {
			out <- PacerSlice
			return
		}
		out <- PacerDefault
	}()
	return <-out
}
