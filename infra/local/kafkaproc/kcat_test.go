package kafkaproc_test

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// TestKcatSCRAMOnKafka3: kcat, an independent client, writes a record and
// reads it back over SASL_SSL with SCRAM-SHA-512, from the client config
// xp writes for the sasl_ssl mode, on Apache Kafka 3.9.x. (On Kafka 4.x
// Debian's kcat cannot: librdkafka before 2.6.1 repeats the client nonce
// in its SCRAM final message, which Kafka 4 refuses; the tests read
// through PLAIN there.)
func TestKcatSCRAMOnKafka3(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is required (apt-get install kcat)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := kafkatest.Start(t, kafkatest.Options{Major: 3})
	if !strings.HasPrefix(c.Version(), "3.") {
		t.Fatalf("started Kafka %s, want 3.x", c.Version())
	}
	admin, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecurityPlaintext].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := kafkaconf.ClientOpts(admin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "kcat-scram"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	cfg := c.Modes()[planner.SecuritySASLSSL].ClientConfig
	props, err := kafkaconf.ReadClientConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if props[kafkaconf.SASLMechanism] != "SCRAM-SHA-512" {
		t.Fatalf("the sasl_ssl client config's mechanism is %q, want SCRAM-SHA-512", props[kafkaconf.SASLMechanism])
	}
	kcatRun := func(stdin string, args ...string) string {
		t.Helper()
		kctx, kcancel := context.WithTimeout(ctx, time.Minute)
		defer kcancel()
		cmd := exec.CommandContext(kctx, kcat, append([]string{"-F", cfg}, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat %v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	kcatRun("scram-record\n", "-P", "-t", topic)
	if got := kcatRun("", "-C", "-t", topic, "-o", "beginning", "-c", "1", "-e", "-f", "%s"); got != "scram-record" {
		t.Errorf("kcat read %q over SCRAM-SHA-512, want the record it wrote", got)
	}
}
