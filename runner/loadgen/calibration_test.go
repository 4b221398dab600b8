package loadgen

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/planner"
)

func ownCluster(t *testing.T) *local.Cluster {
	t.Helper()
	c, err := local.Start(context.Background(), local.Options{Brokers: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestCalibrationProduceDelay slows every Produce request by a known delay
// inside the broker and checks the measured publish p50 rises by that
// delay. At 20 msg/s records are 50 ms apart, so with a 25 ms delay no
// request waits behind another and the shift is the delay itself.
// Baseline and slowed runs alternate twice and the lower p50 of each pair
// counts (load from other processes only ever adds latency).
// Tolerance: ±6 ms on the shift of the median.
func TestCalibrationProduceDelay(t *testing.T) {
	const delay = 25 * time.Millisecond
	const tolerance = 6 * time.Millisecond
	c := ownCluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Rate = 20
	cfg.Partitions = 1
	cfg.LingerMs = 0
	cfg.Duration = 3 * time.Second

	kf := c.Kfake()
	var slowOn atomic.Bool
	var slept atomic.Int64
	kf.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		if slowOn.Load() {
			slept.Add(1)
			kf.SleepControl(func() { time.Sleep(delay) })
		}
		return nil, nil, false
	})
	best := map[bool]*Result{}
	for range 2 {
		for _, slow := range []bool{false, true} {
			slowOn.Store(slow)
			before := slept.Load()
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy {
				t.Fatalf("slow=%v: unhealthy: %v", slow, res.Reasons)
			}
			if n := slept.Load() - before; slow && n < res.Published {
				t.Fatalf("only %d produce requests slept for %d records", n, res.Published)
			}
			if b := best[slow]; b == nil || res.PublishLatencyMs.P50 < b.PublishLatencyMs.P50 {
				best[slow] = res
			}
		}
	}
	base, slow := best[false], best[true]
	shift := time.Duration((slow.PublishLatencyMs.P50 - base.PublishLatencyMs.P50) * float64(time.Millisecond))
	t.Logf("publish p50 %.3f ms -> %.3f ms: shift %v for an injected %v", base.PublishLatencyMs.P50, slow.PublishLatencyMs.P50, shift, delay)
	if shift < delay-tolerance || shift > delay+tolerance {
		t.Fatalf("publish p50 shifted by %v, want %v ± %v", shift, delay, tolerance)
	}
	// End to end includes the produce path, so it shifts at least as much.
	e2eShift := time.Duration((slow.E2ELatencyMs.P50 - base.E2ELatencyMs.P50) * float64(time.Millisecond))
	if e2eShift < delay-tolerance {
		t.Fatalf("e2e p50 shifted by %v, want at least %v", e2eShift, delay-tolerance)
	}
}

// TestCalibrationConsumerStall holds one Fetch for 1.5 s in the middle of
// a 4 s measurement: about 37% of the records then wait between 0 and
// 1.5 s, so the e2e tail must reach about the stall and the backlog must
// grow to about rate × stall, while an unstalled run shows neither.
// Tolerances: e2e max at least 80% of the stall and p90 at least half of
// it; backlog at least half of rate × stall; the baseline's p90 under a
// tenth of the stall (p90, not max: one scheduling hiccup of a loaded
// machine must not void the baseline).
func TestCalibrationConsumerStall(t *testing.T) {
	const stall = 1500 * time.Millisecond
	c := ownCluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Rate = 1000
	cfg.Duration = 4 * time.Second

	base, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !base.Healthy {
		t.Fatalf("baseline unhealthy: %v", base.Reasons)
	}

	var measureAt atomic.Int64
	cfg.OnPhase = func(p string, _ time.Time) {
		if p == "measure" {
			measureAt.Store(time.Now().UnixNano())
		}
	}
	kf := c.Kfake()
	var stalled atomic.Bool
	kf.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		kf.KeepControl()
		m := measureAt.Load()
		if m == 0 || time.Since(time.Unix(0, m)) < time.Second || !stalled.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		kf.SleepControl(func() { time.Sleep(stall) })
		return nil, nil, false
	})
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !stalled.Load() {
		t.Fatal("no fetch was stalled")
	}
	t.Logf("e2e max %.1f ms (baseline %.1f), p90 %.1f ms (baseline %.1f); backlog max %d (baseline %d)",
		res.E2ELatencyMs.Max, base.E2ELatencyMs.Max, res.E2ELatencyMs.P90, base.E2ELatencyMs.P90, res.BacklogMax, base.BacklogMax)
	stallMs := float64(stall / time.Millisecond)
	if res.E2ELatencyMs.Max < 0.8*stallMs {
		t.Fatalf("e2e max %.1f ms under a %v stall", res.E2ELatencyMs.Max, stall)
	}
	if res.E2ELatencyMs.P90 < 0.5*stallMs {
		t.Fatalf("e2e p90 %.1f ms under a %v stall", res.E2ELatencyMs.P90, stall)
	}
	if base.E2ELatencyMs.P90 > stallMs/10 {
		t.Fatalf("baseline e2e p90 %.1f ms already near the stall; calibration meaningless", base.E2ELatencyMs.P90)
	}
	if want := int64(float64(cfg.Rate) * stall.Seconds() / 2); res.BacklogMax < want {
		t.Fatalf("backlog max %d, want at least %d", res.BacklogMax, want)
	}
	if res.BacklogMax <= 2*base.BacklogMax {
		t.Fatalf("backlog max %d does not stand out from the baseline %d", res.BacklogMax, base.BacklogMax)
	}
	if res.Consumed != res.Published {
		t.Fatalf("after the stall consumed %d of %d", res.Consumed, res.Published)
	}
}
