package loadgen

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// TestManyTopics runs producers over several topics: every group consumes
// all of them, counts are exact, each topic gets its share (round robin:
// within one record per producer of an even split) and the run cleans up
// only the topics it created.
func TestManyTopics(t *testing.T) {
	c := cluster(t)
	p := props(t, c, planner.SecurityPlaintext)
	opts, _ := kafkaconf.ClientOpts(p)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close) // subtests run in parallel, after this function returns
	adm := kadm.NewClient(cl)
	exists := func(t *testing.T, topic string) (bool, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := td[topic]
		return ok && d.Err == nil, len(d.Partitions)
	}

	prefix := fmt.Sprintf("many-%d", time.Now().UnixNano())
	// One of the named topics exists already, with 4 partitions and an
	// old record that must not be counted.
	old := prefix + "-1"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, old); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: old, Value: []byte("before the run")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name           string
		topic          string
		topics         int
		rate           int64
		keep           bool
		wantNames      func(res *Result) []string
		wantPartitions []int
		wantLeft       []bool // per topic: still there after the run
	}{
		{
			name: "fresh open loop", topics: 3, rate: 1500,
			wantNames: func(res *Result) []string {
				return []string{res.Config.Topic + "-0", res.Config.Topic + "-1", res.Config.Topic + "-2"}
			},
			wantPartitions: []int{2, 2, 2}, wantLeft: []bool{false, false, false},
		},
		{
			name: "fresh closed loop kept", topics: 2, rate: 0, keep: true,
			wantNames: func(res *Result) []string {
				return []string{res.Config.Topic + "-0", res.Config.Topic + "-1"}
			},
			wantPartitions: []int{2, 2}, wantLeft: []bool{true, true},
		},
		{
			name: "named with one existing", topic: prefix, topics: 3, rate: 1500,
			wantNames:      func(*Result) []string { return []string{prefix + "-0", prefix + "-1", prefix + "-2"} },
			wantPartitions: []int{2, 4, 2}, wantLeft: []bool{false, true, false},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := quick(p)
			cfg.Topic, cfg.Topics, cfg.KeepTopic = tc.topic, tc.topics, tc.keep
			cfg.Partitions, cfg.Producers, cfg.ConsumerGroups, cfg.ConsumersPerGroup = 2, 2, 2, 2
			cfg.Rate, cfg.Duration = tc.rate, 2*time.Second
			if tc.rate == 0 {
				cfg.Concurrency = 4
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Errors != 0 || res.Duplicates != 0 {
				t.Fatalf("unhealthy: %v, %d errors %v, %d duplicates", res.Reasons, res.Errors, res.ErrorSamples, res.Duplicates)
			}
			if tc.rate > 0 && res.Published != 2*tc.rate {
				t.Fatalf("published %d, want %d", res.Published, 2*tc.rate)
			}
			if res.Published == 0 || res.Consumed != 2*res.Published {
				t.Fatalf("published %d consumed %d, want 2 groups × published", res.Published, res.Consumed)
			}
			if res.Config.Topics != tc.topics {
				t.Errorf("config echoes %d topics, want %d", res.Config.Topics, tc.topics)
			}
			names := tc.wantNames(res)
			if len(res.Topics) != len(names) {
				t.Fatalf("%d topics in the result, want %d: %+v", len(res.Topics), len(names), res.Topics)
			}
			var pub, cons int64
			share := res.Published / int64(tc.topics)
			for i, tp := range res.Topics {
				if tp.Topic != names[i] || tp.Partitions != tc.wantPartitions[i] {
					t.Errorf("topic %d is %s with %d partitions, want %s with %d", i, tp.Topic, tp.Partitions, names[i], tc.wantPartitions[i])
				}
				// Each producer's measured records are a run of
				// consecutive ones, sent to the topics in turn.
				if d := tp.Published - share; d < -int64(cfg.Producers) || d > int64(cfg.Producers) {
					t.Errorf("topic %s got %d of %d records, want %d ± %d", tp.Topic, tp.Published, res.Published, share, cfg.Producers)
				}
				if tp.Consumed != 2*tp.Published {
					t.Errorf("topic %s: consumed %d, want 2 groups × %d", tp.Topic, tp.Consumed, tp.Published)
				}
				pub += tp.Published
				cons += tp.Consumed
				if left, _ := exists(t, tp.Topic); left != tc.wantLeft[i] {
					t.Errorf("topic %s still there: %v, want %v (warnings %v)", tp.Topic, left, tc.wantLeft[i], res.Warnings)
				}
			}
			if pub != res.Published || cons != res.Consumed {
				t.Errorf("per-topic counts sum to %d/%d, want %d/%d", pub, cons, res.Published, res.Consumed)
			}
			if tc.keep {
				dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := adm.DeleteTopics(dctx, names...); err != nil {
					t.Error(err)
				}
			}
		})
	}
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		adm.DeleteTopics(dctx, old)
	})
}
