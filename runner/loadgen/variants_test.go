package loadgen

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/planner"
)

// TestVariants runs the settings that change the code path, each end to
// end at a modest rate on the shared cluster.
func TestVariants(t *testing.T) {
	c := cluster(t)
	cases := []struct {
		name   string
		mode   string
		mutate func(*Config)
		check  func(t *testing.T, cfg Config, r *Result)
	}{
		{"closed loop", planner.SecurityPlaintext, func(c *Config) { c.Rate = 0; c.Concurrency = 4 }, func(t *testing.T, _ Config, r *Result) {
			if r.SendDelayMs.P50 != 0 {
				t.Errorf("closed loop recorded send delay %+v", r.SendDelayMs)
			}
		}},
		{"saturating", planner.SecurityPlaintext, func(c *Config) { c.Rate = 0; c.Concurrency = 0 }, func(t *testing.T, _ Config, r *Result) {
			if want := BufferBytes / r.Config.MessageSize; r.Config.InFlight != want || r.Config.Concurrency != 0 {
				t.Errorf("max without concurrency: in flight %d (concurrency %d), want %d, what a %d-byte buffer holds",
					r.Config.InFlight, r.Config.Concurrency, want, BufferBytes)
			}
		}},
		{"acks 0", planner.SecurityPlaintext, func(c *Config) { c.Acks = "0" }, nil},
		{"acks 1 lz4", planner.SecurityTLS, func(c *Config) { c.Acks = "1"; c.Compression = "lz4" }, nil},
		{"zstd json", planner.SecurityPlaintext, func(c *Config) { c.Compression = "zstd"; c.Encoding = EncodingJSON }, nil},
		{"avro", planner.SecurityMTLS, func(c *Config) { c.Encoding = EncodingAvro; c.MessageSize = 512 }, nil},
		{"protobuf", planner.SecuritySASLSSL, func(c *Config) { c.Encoding = EncodingProtobuf }, nil},
		{"2 producers 2 groups 2 consumers", planner.SecurityPlaintext, func(c *Config) {
			c.Producers, c.ConsumerGroups, c.ConsumersPerGroup = 2, 2, 2
		}, func(t *testing.T, cfg Config, r *Result) {
			if r.Consumed != 2*r.Published {
				t.Errorf("consumed %d, want 2 × %d", r.Consumed, r.Published)
			}
		}},
		{"no consumers", planner.SecurityPlaintext, func(c *Config) { c.ConsumerGroups = 0 }, func(t *testing.T, _ Config, r *Result) {
			if r.Consumed != 0 || r.E2ELatencyMs.P50 != 0 {
				t.Errorf("consumed %d with no groups", r.Consumed)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := quick(props(t, c, tc.mode))
			cfg.Rate = 1000
			cfg.Duration = 2 * time.Second
			tc.mutate(&cfg)
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy {
				t.Fatalf("unhealthy: %v", res.Reasons)
			}
			if cfg.Rate > 0 && res.Published != cfg.Rate*2 {
				t.Errorf("published %d, want %d", res.Published, cfg.Rate*2)
			}
			if res.Published == 0 || res.PublishLatencyMs.P50 <= 0 {
				t.Errorf("published %d, publish p50 %v", res.Published, res.PublishLatencyMs.P50)
			}
			if tc.check != nil {
				tc.check(t, cfg, res)
			}
		})
	}
}

// TestAlteredRecordsAreErrors writes, into the run's topic during the
// measurement, one record whose digest does not match its value and one
// without the xp headers: both must count as errors and fail the run.
func TestAlteredRecordsAreErrors(t *testing.T) {
	c := cluster(t)
	p := props(t, c, planner.SecurityPlaintext)
	cfg := quick(p)
	cfg.Topic = fmt.Sprintf("altered-%d", time.Now().UnixNano())
	cfg.Partitions = 1
	opts, err := kafkaconf.ClientOpts(p)
	if err != nil {
		t.Fatal(err)
	}
	intruder, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(cfg.Topic))...)
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	injected := make(chan error, 1)
	cfg.OnPhase = func(phase string, _ time.Time) {
		if phase != "measure" {
			return
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var hb [16]byte
			binary.BigEndian.PutUint64(hb[:8], uint64(time.Now().UnixNano()))
			value := []byte("this value was altered")
			binary.BigEndian.PutUint64(hb[8:], Digest(nil, []byte("the original value")))
			bad := &kgo.Record{Value: value, Headers: []kgo.RecordHeader{{Key: HeaderTime, Value: hb[:8]}, {Key: HeaderDigest, Value: hb[8:]}}}
			bare := &kgo.Record{Value: []byte("no headers")}
			injected <- intruder.ProduceSync(ctx, bad, bare).FirstErr()
		}()
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	if res.Errors != 2 {
		t.Fatalf("errors %d, want 2 (samples %v)", res.Errors, res.ErrorSamples)
	}
	if res.Healthy {
		t.Fatal("healthy with altered records")
	}
	all := strings.Join(res.ErrorSamples, "; ")
	if !strings.Contains(all, "digest") || !strings.Contains(all, "lacks the xp headers") {
		t.Fatalf("error samples %q do not name both faults", all)
	}
}

// TestReplicatedTopic: three brokers, replication factor 3,
// min.insync.replicas 2, topic kept and checked through kadm afterwards.
func TestReplicatedTopic(t *testing.T) {
	t.Parallel()
	c, err := local.Start(context.Background(), local.Options{Brokers: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := props(t, c, planner.SecurityTLS)
	cfg := quick(p)
	cfg.Duration = 2 * time.Second
	cfg.ReplicationFactor, cfg.MinInsyncReplicas, cfg.KeepTopic = 3, 2, true
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy {
		t.Fatalf("unhealthy: %v", res.Reasons)
	}
	opts, _ := kafkaconf.ClientOpts(p)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, res.Config.Topic)
	if err != nil {
		t.Fatal(err)
	}
	topic := td[res.Config.Topic]
	if len(topic.Partitions) != cfg.Partitions {
		t.Fatalf("kept topic %q has %d partitions, want %d", res.Config.Topic, len(topic.Partitions), cfg.Partitions)
	}
	for _, pd := range topic.Partitions {
		if len(pd.Replicas) != 3 {
			t.Fatalf("partition %d has %d replicas, want 3", pd.Partition, len(pd.Replicas))
		}
	}
	rc, err := adm.DescribeTopicConfigs(ctx, res.Config.Topic)
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := rc.On(res.Config.Topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, kv := range cfgs.Configs {
		if kv.Key == "min.insync.replicas" && kv.Value != nil && *kv.Value == "2" {
			found = true
		}
	}
	if !found {
		t.Fatal("min.insync.replicas=2 not set on the topic")
	}
}

// TestTopicLifecycle: a fresh named topic and the run's consumer group are
// deleted after the run, or both kept with KeepTopic; an existing topic is
// read from its end, keeps its partitions and is never deleted.
func TestTopicLifecycle(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	p := props(t, c, planner.SecurityPlaintext)
	opts, _ := kafkaconf.ClientOpts(p)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	exists := func(topic string) bool {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := td[topic] // kadm lists a named topic even when it is unknown
		return ok && d.Err == nil
	}

	fresh := fmt.Sprintf("fresh-%d", time.Now().UnixNano())
	cfg := quick(p)
	cfg.Topic, cfg.Duration = fresh, 2*time.Second
	res, err := Run(context.Background(), cfg)
	if err != nil || !res.Healthy {
		t.Fatalf("fresh topic run: %v %v", err, res)
	}
	if exists(fresh) {
		t.Fatalf("fresh topic %s left behind (warnings %v)", fresh, res.Warnings)
	}
	groups := func(topic string) []string {
		gs, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range gs.Groups() {
			if strings.HasPrefix(g, topic+"-g") {
				out = append(out, g)
			}
		}
		return out
	}
	if left := groups(fresh); len(left) != 0 {
		t.Fatalf("consumer groups %v left behind (warnings %v)", left, res.Warnings)
	}
	// Kept, the run's topic and its consumer group stay.
	kept := fmt.Sprintf("kept-%d", time.Now().UnixNano())
	cfg.Topic, cfg.KeepTopic = kept, true
	if res, err := Run(context.Background(), cfg); err != nil || !res.Healthy {
		t.Fatalf("kept topic run: %v %v", err, res)
	}
	if left := groups(kept); !exists(kept) || !slices.Equal(left, []string{GroupName(kept, 0)}) {
		t.Fatalf("kept: topic there %v, groups %v; want the topic and %s", exists(kept), left, GroupName(kept, 0))
	}
	cfg.KeepTopic = false

	old := fmt.Sprintf("existing-%d", time.Now().UnixNano())
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, old); err != nil {
		t.Fatal(err)
	}
	// Records already there must not be consumed as the run's.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: old, Value: []byte("before the run")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg.Topic = old
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Healthy || res.Errors != 0 {
		t.Fatalf("existing topic run: %v, %d errors %v", res.Reasons, res.Errors, res.ErrorSamples)
	}
	if !exists(old) {
		t.Fatalf("existing topic %s was deleted", old)
	}
}
