// Package kafkatest starts, for tests and benchmarks, an Apache Kafka
// cluster of local JVMs (infra/local/kafkaproc) from the release `make
// kafka-dist` assembled into out/dist, and stops it when the test ends. A
// missing release or Java fails the test, naming what to install or make.
package kafkatest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kdc"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/internal/disttest"
)

// Options of Start; the zero value is one broker of the newest 4.x
// release with a 384 MiB heap.
type Options struct {
	// Major is the release's major version (4 or 3); default 4.
	Major   int
	Brokers int
	// Heap is each broker's -Xmx and -Xms; default 384m.
	Heap string
	// JVMFlags; nil: kafkaproc's defaults (Kafka's own).
	JVMFlags []string
	// TLS narrows the brokers' TLS listeners (kafkaproc.Options.TLS).
	TLS kafkaconf.TLSChoice
	// TLSKey is the certificates' key (kafkaproc.Options.TLSKey).
	TLSKey string
	// OAuth, KDC and ReauthMs add OAUTHBEARER and GSSAPI
	// (kafkaproc.Options).
	OAuth    *kafkaconf.OAuthServer
	KDC      *kdc.KDC
	ReauthMs int
	// Authorizer runs KRaft's StandardAuthorizer
	// (kafkaproc.Options.Authorizer); Cluster.CreateACLs adds ACLs.
	Authorizer bool
}

// Start starts the cluster in a temporary directory of tb and closes it
// when tb ends.
func Start(tb testing.TB, o Options) *kafkaproc.Cluster {
	tb.Helper()
	if o.Major == 0 {
		o.Major = 4
	}
	if o.Heap == "" {
		o.Heap = "384m"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	java, err := kafkaproc.FindJava(ctx, "", os.Getenv)
	if err != nil {
		tb.Fatalf("kafkatest: %v (the tests run Apache Kafka: install openjdk-17-jdk-headless)", err)
	}
	d := disttest.Kafka(tb, o.Major)
	rel, err := kafkaproc.Prepare(ctx, tb.TempDir(), d.Path, d.SHA512)
	if err != nil {
		tb.Fatalf("kafkatest: %v", err)
	}
	c, err := kafkaproc.Start(ctx, kafkaproc.Options{Release: rel, Java: java, Brokers: o.Brokers, Dir: tb.TempDir(),
		Heap: o.Heap, JVMFlags: o.JVMFlags, TLS: o.TLS, TLSKey: o.TLSKey, OAuth: o.OAuth, KDC: o.KDC, ReauthMs: o.ReauthMs,
		Authorizer: o.Authorizer})
	if err != nil {
		tb.Fatalf("kafkatest: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// ProduceOne produces one record to topic with the client properties
// props (kafkaconf's form) and returns the produce's error: how a test
// asks whether a principal is admitted to a topic (nil) or refused (an
// authorization error), within 30 s.
func ProduceOne(ctx context.Context, props map[string]string, topic string) error {
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return cl.ProduceSync(pctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
}
