package perftest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// ProducerPerformance connects as xp's clients do in every direct mode of
// an Apache Kafka broker (the Java client config WriteJavaClientConfig
// renders: PEM trust store, PEM key store, SCRAM JAAS), sends what it was
// asked, and the records are on the broker.
func TestRunEveryMode(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	for _, mode := range planner.DirectModes() {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			props := clientProps(t, c, mode)
			topic := "pp-" + strings.ReplaceAll(mode, "_", "-")
			createTopic(t, ctx, props, topic)
			r, err := Run(ctx, Options{Release: c.Release().Dir, ClientConfig: props, Dir: t.TempDir(), Topic: topic,
				Records: 3000, Warmup: 1000, RecordSize: 256, Acks: "all", LingerMs: 1, BatchBytes: 16384,
				JVMOpts: []string{"-Xmx256m"}})
			if err != nil {
				t.Fatal(err)
			}
			if !r.SteadyState || r.Records != 2000 || r.RecordsPerSec <= 0 || r.P99Ms < r.P50Ms {
				t.Fatalf("summary %+v: want the 2,000 steady-state records with a rate and ordered percentiles", r)
			}
			if n := endOffsets(t, ctx, props, topic); n != 3000 {
				t.Fatalf("%d records on the broker, want 3000", n)
			}
		})
	}
}

// A broker that does not answer fails the run with the tool's words.
func TestRunFails(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	props := clientProps(t, c, planner.SecurityTLS)
	props[kafkaconf.SSLCALocation] = "/nonexistent/ca.pem"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := Run(ctx, Options{Release: c.Release().Dir, ClientConfig: props, Dir: t.TempDir(), Topic: "pp-fail",
		Records: 10, RecordSize: 100, Acks: "all", LingerMs: 1, BatchBytes: 16384, JVMOpts: []string{"-Xmx256m"}})
	if err == nil || !strings.Contains(err.Error(), "ProducerPerformance") {
		t.Fatalf("Run with a missing trust store: %v", err)
	}
}

func clientProps(t *testing.T, c *kafkaproc.Cluster, mode string) map[string]string {
	t.Helper()
	props, err := kafkaconf.ReadClientConfig(c.Modes()[mode].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	return props
}

// createTopic creates topic with 6 partitions and the broker's default
// replication.
func createTopic(t testing.TB, ctx context.Context, props map[string]string, topic string) {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 6, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
}

func endOffsets(t *testing.T, ctx context.Context, props map[string]string, topic string) int64 {
	t.Helper()
	opts, _ := kafkaconf.ClientOpts(props)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}
