package loadgen

import (
	"fmt"
	"math"
	"time"
)

// measurement is what a finished run counted that its health depends on,
// read once every client has stopped.
type measurement struct {
	// Published and Consumed are records whose intended send time lies in
	// the measurement window; Consumed is summed over every group.
	Published, Consumed int64
	// PublishRate and ConsumeRate are Published and Consumed per second of
	// the window.
	PublishRate, ConsumeRate float64
	// Unsent is records due in the window that an open-loop producer never
	// sent because it fell more than sendGrace behind.
	Unsent int64
	// Drained is whether every buffered record was acknowledged and every
	// acknowledged record consumed by every group within the drain timeout.
	Drained bool
	// Backlog is acknowledged records not consumed (summed over groups) and
	// Unacked records still in the producers' buffers when the drain ended.
	Backlog, Unacked int64
	// Errors counts failed produces, fetch errors and records failing the
	// digest check; ErrorSamples are the first distinct messages.
	Errors       int64
	ErrorSamples []string
}

// healthLimit is the largest relative difference the rate rules allow.
const healthLimit = 0.01

// judgeHealth applies the health rules of a run (design rule 3) to what it
// measured: the publish rate within 1% of cfg.Rate (open loop; some record
// published in closed loop), the records consumed within 1% of
// ConsumerGroups × published, the backlog drained within cfg.DrainTimeout,
// and no errors. It returns whether the run is healthy and one sentence per
// broken rule, in that order; reasons is empty, never nil, when healthy.
func judgeHealth(cfg Config, m measurement) (healthy bool, reasons []string) {
	reasons = []string{}
	if r := rateReason(cfg.Rate, m); r != "" {
		reasons = append(reasons, r)
	}
	if r := consumeReason(int64(cfg.ConsumerGroups), m); r != "" {
		reasons = append(reasons, r)
	}
	if r := drainReason(cfg.DrainTimeout, m); r != "" {
		reasons = append(reasons, r)
	}
	if r := errorReason(m); r != "" {
		reasons = append(reasons, r)
	}
	return len(reasons) == 0, reasons
}

// rateReason judges the publish rate against the target rate (msg/s; 0 is
// closed loop, where only a window without any record fails), naming the
// records never sent when producers fell behind.
func rateReason(rate int64, m measurement) string {
	if rate == 0 {
		if m.Published == 0 {
			return "no record was published in the measurement window"
		}
		return ""
	}
	off := (m.PublishRate - float64(rate)) / float64(rate)
	if math.Abs(off) > healthLimit {
		why := ""
		if m.Unsent > 0 {
			why = fmt.Sprintf("; %d records due in the window were never sent (producers more than %v behind schedule)", m.Unsent, sendGrace)
		}
		return fmt.Sprintf("publish rate %.1f msg/s is %+.2f%% off the target %d msg/s (limit ±1%%)%s", m.PublishRate, 100*off, rate, why)
	}
	return ""
}

// consumeReason judges the records consumed against groups × published:
// every group must read every record. Without groups there is nothing to
// judge.
func consumeReason(groups int64, m measurement) string {
	if groups <= 0 {
		return ""
	}
	want := groups * m.Published
	off := float64(m.Consumed-want) / math.Max(1, float64(want))
	if math.Abs(off) > healthLimit {
		return fmt.Sprintf("consume rate %.1f msg/s is %+.2f%% off %d groups × publish rate %.1f msg/s (limit ±1%%)", m.ConsumeRate, 100*off, groups, m.PublishRate)
	}
	return ""
}

// drainReason reports a drain that did not finish within timeout, with the
// records left unconsumed and unacknowledged.
func drainReason(timeout time.Duration, m measurement) string {
	if m.Drained {
		return ""
	}
	return fmt.Sprintf("not drained within the drain timeout %v: %d records unconsumed, %d unacknowledged", timeout, m.Backlog, m.Unacked)
}

// errorReason reports the errors of the run, quoting the first.
func errorReason(m measurement) string {
	if m.Errors <= 0 {
		return ""
	}
	first := ""
	if len(m.ErrorSamples) > 0 {
		first = " (first: " + m.ErrorSamples[0] + ")"
	}
	return fmt.Sprintf("%d errors%s", m.Errors, first)
}
