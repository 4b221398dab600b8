package loadgen

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJudgeHealth checks each health rule on measured numbers alone, with
// the sentence a user reads for every broken rule.
func TestJudgeHealth(t *testing.T) {
	open := Config{Rate: 1000, ConsumerGroups: 1, DrainTimeout: 30 * time.Second}
	closed := Config{Rate: 0, ConsumerGroups: 1, DrainTimeout: 30 * time.Second}
	twoGroups := Config{Rate: 1000, ConsumerGroups: 2, DrainTimeout: 30 * time.Second}
	produceOnly := Config{Rate: 1000, ConsumerGroups: 0, DrainTimeout: 30 * time.Second}
	// good is a healthy open-loop run of 30 s at 1000 msg/s, one group.
	good := measurement{Published: 30000, Consumed: 30000, PublishRate: 1000, ConsumeRate: 1000, Drained: true}
	with := func(f func(*measurement)) measurement { m := good; f(&m); return m }

	for _, tc := range []struct {
		name string
		cfg  Config
		m    measurement
		want []string
	}{
		{"healthy open loop", open, good, nil},
		{"healthy closed loop", closed, measurement{Published: 5, Consumed: 5, PublishRate: 0.5, ConsumeRate: 0.5, Drained: true}, nil},
		{"rate 1% over is within the limit", open, with(func(m *measurement) { m.PublishRate = 1010 }), nil},
		{"rate 1% under is within the limit", open, with(func(m *measurement) { m.PublishRate = 990 }), nil},
		{"rate shortfall", open, with(func(m *measurement) { m.PublishRate, m.Published, m.Consumed = 950, 28500, 28500 }), []string{
			"publish rate 950.0 msg/s is -5.00% off the target 1000 msg/s (limit ±1%)",
		}},
		{"rate shortfall from records never sent", open, with(func(m *measurement) {
			m.PublishRate, m.Published, m.Consumed, m.Unsent = 950, 28500, 28500, 1500
		}), []string{
			"publish rate 950.0 msg/s is -5.00% off the target 1000 msg/s (limit ±1%); 1500 records due in the window were never sent (producers more than 1s behind schedule)",
		}},
		{"rate excess", open, with(func(m *measurement) { m.PublishRate = 1100 }), []string{
			"publish rate 1100.0 msg/s is +10.00% off the target 1000 msg/s (limit ±1%)",
		}},
		{"closed loop published nothing", closed, measurement{Drained: true}, []string{
			"no record was published in the measurement window",
		}},
		{"consume rate short of the groups", twoGroups, with(func(m *measurement) { m.Consumed, m.ConsumeRate = 45000, 1500 }), []string{
			"consume rate 1500.0 msg/s is -25.00% off 2 groups × publish rate 1000.0 msg/s (limit ±1%)",
		}},
		{"consume rate over the records published", open, with(func(m *measurement) { m.Consumed, m.ConsumeRate = 31000, 1033.3 }), []string{
			"consume rate 1033.3 msg/s is +3.33% off 1 groups × publish rate 1000.0 msg/s (limit ±1%)",
		}},
		{"consume rate within the limit", twoGroups, with(func(m *measurement) { m.Consumed, m.ConsumeRate = 59400, 1980 }), nil},
		{"no consumer groups: nothing to consume", produceOnly, with(func(m *measurement) { m.Consumed, m.ConsumeRate = 0, 0 }), nil},
		{"backlog not drained", open, with(func(m *measurement) { m.Drained, m.Backlog, m.Unacked = false, 1200, 7 }), []string{
			"not drained within the drain timeout 30s: 1200 records unconsumed, 7 unacknowledged",
		}},
		{"publish errors", open, with(func(m *measurement) {
			m.Errors, m.ErrorSamples = 3, []string{"produce: NOT_ENOUGH_REPLICAS", "fetch: EOF"}
		}), []string{
			"3 errors (first: produce: NOT_ENOUGH_REPLICAS)",
		}},
		{"altered records", open, with(func(m *measurement) {
			m.Errors, m.ErrorSamples = 1, []string{"record t/0@5 fails its digest check (altered in transit)"}
		}), []string{
			"1 errors (first: record t/0@5 fails its digest check (altered in transit))",
		}},
		{"errors without a sample", open, with(func(m *measurement) { m.Errors = 2 }), []string{"2 errors"}},
		{"every rule broken, in rule order", twoGroups, measurement{
			Published: 15000, Consumed: 100, PublishRate: 500, ConsumeRate: 3.3,
			Drained: false, Backlog: 29900, Unacked: 40, Errors: 1, ErrorSamples: []string{"produce: timeout"},
		}, []string{
			"publish rate 500.0 msg/s is -50.00% off the target 1000 msg/s (limit ±1%)",
			"consume rate 3.3 msg/s is -99.67% off 2 groups × publish rate 500.0 msg/s (limit ±1%)",
			"not drained within the drain timeout 30s: 29900 records unconsumed, 40 unacknowledged",
			"1 errors (first: produce: timeout)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			healthy, reasons := judgeHealth(tc.cfg, tc.m)
			if healthy != (len(tc.want) == 0) {
				t.Errorf("healthy = %v, want %v (reasons %q)", healthy, len(tc.want) == 0, reasons)
			}
			if reasons == nil {
				t.Fatal("reasons is nil; a healthy run must show [] in JSON")
			}
			if !slices.Equal(reasons, tc.want) {
				t.Errorf("reasons:\n got %q\nwant %q", reasons, tc.want)
			}
		})
	}
}

// TestJudgeHealthJSON checks that a healthy run's reasons print as an empty
// list, which readers of `xp loadgen --json` rely on.
func TestJudgeHealthJSON(t *testing.T) {
	var res Result
	res.Healthy, res.Reasons = judgeHealth(Config{Rate: 10, ConsumerGroups: 1}, measurement{Published: 10, Consumed: 10, PublishRate: 10, ConsumeRate: 10, Drained: true})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || !strings.Contains(string(b), `"healthy":true,"reasons":[]`) {
		t.Errorf("healthy %v; want true and reasons [] in %s", res.Healthy, b)
	}
}
