package kafkaproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// testJava is the java on PATH; a test that runs brokers fails without it.
func testJava(t *testing.T) Java {
	t.Helper()
	j, err := FindJava(context.Background(), "", os.Getenv)
	if err != nil {
		t.Fatalf("%v (the tests run Apache Kafka: install openjdk-17-jre-headless)", err)
	}
	return j
}

// testRelease is the Kafka release of major version major from out/dist,
// unpacked into a cache of the test.
func testRelease(t *testing.T, major int) Release {
	t.Helper()
	d := disttest.Kafka(t, major)
	r, err := Prepare(context.Background(), t.TempDir(), d.Path, d.SHA512)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// roundTrip creates a topic through props' connection, produces a record
// and reads it back.
func roundTrip(ctx context.Context, props map[string]string, topic string) error {
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return err
	}
	// A partition just created can be unknown to the broker's replica
	// manager for a moment after CreateTopics answers (KRaft applies the
	// new metadata asynchronously): keep producing until it is known,
	// bounded by ctx, rather than failing after franz-go's default 4 tries.
	cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.UnknownTopicRetries(-1))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v-" + topic)}).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == "v-"+topic {
				return nil
			}
		}
	}
}

// TestKeptClusterServesEveryModeAndSweepEndsIt: a one-broker Apache Kafka
// 4.x cluster serves every direct mode (SCRAM-SHA-512 and PLAIN on
// sasl_ssl) on its own loopback address with the rendered JVM flags; kept
// (detached) it survives Close of nothing, and Sweep of its directory
// kills it.
func TestKeptClusterServesEveryModeAndSweepEndsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	capture := captureLoopback(t)
	c, err := Start(ctx, Options{Release: testRelease(t, 4), Java: testJava(t), Brokers: 1, Dir: dir, Heap: "384m",
		JVMFlags: []string{"-XX:+UseG1GC"}, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The SCRAM user is created over TLS: no AlterUserScramCredentials
	// request (api key 51) reached the plaintext listener, which did
	// answer the readiness checks' requests in clear.
	_, port, _ := net.SplitHostPort(c.Modes()[planner.SecurityPlaintext].Bootstrap[0])
	p, _ := strconv.Atoi(port)
	keys := capture.apiKeys(uint16(p))
	if len(keys) == 0 {
		t.Fatalf("no request to the plaintext listener (port %d) captured: the capture does not see loopback", p)
	}
	if slices.Contains(keys, 51) {
		t.Errorf("the SCRAM credential went to the plaintext listener in clear (api keys seen there: %v)", keys)
	}
	bs := c.Brokers()
	if len(bs) != 1 || !strings.HasPrefix(bs[0].Address, "127.") || bs[0].Address == "127.0.0.1" || bs[0].Pid <= 0 {
		t.Fatalf("brokers %+v: want one on a 127/8 address of its own with a pid", bs)
	}
	hosts := filepath.Join(dir, "jvm-hosts")
	if got := c.JVMFlags(); !slices.Equal(got, []string{"-Xmx384m", "-Xms384m", "-XX:+UseG1GC", "-Djdk.net.hosts.file=" + hosts}) {
		t.Errorf("JVM flags %v", got)
	}
	// The brokers' own hosts file names localhost only, so a reverse
	// lookup of their 127.x address fails at once (writeLoopbackHosts).
	if b, err := os.ReadFile(hosts); err != nil || strings.Contains(string(b), bs[0].Address) || !strings.Contains(string(b), "127.0.0.1 localhost") {
		t.Errorf("jvm-hosts %q, %v: want localhost only", b, err)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", bs[0].Pid))
	for _, want := range []string{"-Xmx384m", "-XX:+UseG1GC", "kafka.Kafka", nodeMarker + bs[0].Dir} {
		if !strings.Contains(string(cmdline), want+"\x00") {
			t.Errorf("the JVM's command line %q lacks %q", cmdline, want)
		}
	}
	configs := map[string]string{"sasl_ssl-plain": c.SASLPlainConfig()}
	for _, m := range planner.DirectModes() {
		configs[m] = c.Modes()[m].ClientConfig
	}
	for name, path := range configs {
		props, err := kafkaconf.ReadClientConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s is mode %v, want 0600", path, fi.Mode().Perm())
		}
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		if err := roundTrip(rctx, props, "t-"+strings.ReplaceAll(name, "_", "-")); err != nil {
			t.Errorf("mode %s: %v", name, err)
		}
		rcancel()
	}
	if log, _ := os.ReadFile(filepath.Join(bs[0].Dir, "logs", "server.log")); !strings.Contains(string(log), "Kafka version: "+c.Version()) {
		t.Errorf("server.log does not name Kafka %s", c.Version())
	}
	killed, err := Sweep(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(killed, bs[0].Pid) {
		t.Fatalf("Sweep killed %v, not the broker %d", killed, bs[0].Pid)
	}
	if alive(bs[0].Pid) {
		t.Fatalf("broker %d alive after Sweep", bs[0].Pid)
	}
}
