package local

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

func startCluster(t *testing.T, brokers int) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Brokers: brokers, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clientFor(t *testing.T, path string, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	props, err := kafkaconf.ReadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// scram256Config writes a copy of c's sasl_ssl client config that logs in
// with SCRAM-SHA-256, and returns its path.
func scram256Config(t *testing.T, c *Cluster) string {
	t.Helper()
	props, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	props[kafkaconf.SASLMechanism] = MechScramSHA256
	path := filepath.Join(t.TempDir(), "scram-sha-256.properties")
	if err := kafkaconf.WriteClientConfig(path, props); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEveryModeRoundTrip produces and consumes through each mode's fronts
// with three brokers (sasl_ssl with each mechanism), and checks metadata
// names only that mode's fronts.
func TestEveryModeRoundTrip(t *testing.T) {
	c := startCluster(t, 3)
	modes := c.Modes()
	configs := map[string]string{}
	for name, m := range modes {
		configs[name] = m.ClientConfig
	}
	configs["sasl_ssl PLAIN"] = c.SASLPlainConfig()
	configs["sasl_ssl SCRAM-SHA-256"] = scram256Config(t, c)
	for name, path := range configs {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, _ := os.Stat(path)
			if st.Mode().Perm() != 0o600 {
				t.Errorf("client config mode %v, want 0600", st.Mode().Perm())
			}
			topic := "rt-" + strings.NewReplacer(" ", "-").Replace(name)
			cl := clientFor(t, path)
			adm := kadm.NewClient(cl)
			if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			meta, err := adm.BrokerMetadata(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mode := modes[strings.Fields(name)[0]]
			for _, b := range meta.Brokers {
				addr := fmt.Sprintf("%s:%d", b.Host, b.Port)
				if !strings.Contains(strings.Join(mode.Bootstrap, ","), addr) {
					t.Errorf("metadata advertises %s, not one of this mode's fronts %s", addr, mode.Bootstrap)
				}
			}
			const n = 300
			for i := range n {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}, nil)
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			cons := clientFor(t, path, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("g-"+topic))
			got := 0
			for got < n {
				fs := cons.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("consumed %d of %d: %v", got, n, err)
				}
				fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
				got += fs.NumRecords()
			}
			if got != n {
				t.Fatalf("consumed %d, want %d", got, n)
			}
		})
	}
}

// TestModeRejections: each mode refuses a client that lacks what it needs.
func TestModeRejections(t *testing.T) {
	c := startCluster(t, 1)
	other := startCluster(t, 1) // a foreign CA
	m := c.Modes()
	read := func(path string) map[string]string {
		p, err := kafkaconf.ReadClientConfig(path)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name   string
		mutate func(p map[string]string)
		mode   string
	}{
		{"tls with wrong CA", func(p map[string]string) { p[kafkaconf.SSLCALocation] = other.Authority().CAPath() }, planner.SecurityTLS},
		{"tls spoken to plaintext front", func(p map[string]string) {
			p[kafkaconf.BootstrapServers] = strings.Join(m[planner.SecurityPlaintext].Bootstrap, ",")
		}, planner.SecurityTLS},
		{"mtls without client certificate", func(p map[string]string) {
			delete(p, kafkaconf.SSLCertificate)
			delete(p, kafkaconf.SSLKey)
		}, planner.SecurityMTLS},
		{"sasl_ssl bad scram password", func(p map[string]string) { p[kafkaconf.SASLPassword] = "wrong" }, planner.SecuritySASLSSL},
		{"sasl_ssl bad plain password", func(p map[string]string) {
			p[kafkaconf.SASLPassword] = "wrong"
			p[kafkaconf.SASLMechanism] = MechPlain
		}, planner.SecuritySASLSSL},
		{"sasl_ssl bad scram-sha-256 password", func(p map[string]string) {
			p[kafkaconf.SASLPassword] = "wrong"
			p[kafkaconf.SASLMechanism] = MechScramSHA256
		}, planner.SecuritySASLSSL},
		{"sasl_ssl unknown user", func(p map[string]string) { p[kafkaconf.SASLUsername] = "eve" }, planner.SecuritySASLSSL},
		{"sasl_ssl without sasl", func(p map[string]string) {
			p[kafkaconf.SecurityProtocol] = "ssl"
			delete(p, kafkaconf.SASLMechanism)
			delete(p, kafkaconf.SASLUsername)
			delete(p, kafkaconf.SASLPassword)
		}, planner.SecuritySASLSSL},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := read(m[tc.mode].ClientConfig)
			tc.mutate(p)
			opts, err := kafkaconf.ClientOpts(p)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := kadm.NewClient(cl).ListTopics(ctx); err == nil {
				t.Fatal("request succeeded, want refusal")
			}
		})
	}
}

// TestKcatInterop: kcat, an independent librdkafka client, produces and
// consumes on every mode with the generated files unchanged.
func TestKcatInterop(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is required (apt-get install kcat): ", err)
	}
	c := startCluster(t, 2)
	configs := map[string]string{}
	for name, m := range c.Modes() {
		configs[name] = m.ClientConfig
	}
	configs["sasl_ssl-plain"] = c.SASLPlainConfig()
	configs["sasl_ssl-scram-sha-256"] = scram256Config(t, c)
	for name, path := range configs {
		t.Run(name, func(t *testing.T) {
			topic := "kcat-" + name
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var msgs []string
			for i := range 20 {
				msgs = append(msgs, fmt.Sprintf("%s-%d", name, i))
			}
			prod := exec.CommandContext(ctx, kcat, "-F", path, "-P", "-t", topic, "-p", "0")
			prod.Stdin = strings.NewReader(strings.Join(msgs, "\n") + "\n")
			if out, err := prod.CombinedOutput(); err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			cons := exec.CommandContext(ctx, kcat, "-F", path, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q")
			var stderr bytes.Buffer
			cons.Stderr = &stderr
			out, err := cons.Output()
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, stderr.String())
			}
			got := strings.Fields(string(out))
			if strings.Join(got, ",") != strings.Join(msgs, ",") {
				t.Fatalf("kcat consumed %v, want %v", got, msgs)
			}
		})
	}
}

func TestCloseRemovesTempDir(t *testing.T) {
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir()
	if _, err := os.Stat(filepath.Join(dir, "plaintext.properties")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s left behind: %v", dir, err)
	}
	if err := c.AddMode("x", endpoint.Endpoint{}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddMode("x", endpoint.Endpoint{}); err == nil {
		t.Fatal("duplicate mode accepted")
	}
	if _, err := Start(context.Background(), Options{Brokers: 10}); err == nil {
		t.Fatal("10 brokers accepted")
	}
}

// TestRetention: with Options.Retention the cluster drops records older
// than it (here ten records stamped an hour ago) and keeps newer ones in
// the same partition, so long high-rate loads stay within memory.
func TestRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const topic = "retained"
	cl := clientFor(t, c.Modes()[planner.SecurityPlaintext].ClientConfig, kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var old, recent []*kgo.Record
	for i := range 10 {
		old = append(old, &kgo.Record{Value: fmt.Appendf(nil, "old-%d", i), Timestamp: time.Now().Add(-time.Hour)})
	}
	for i := range 5 {
		recent = append(recent, &kgo.Record{Value: fmt.Appendf(nil, "new-%d", i)})
	}
	// Two produce calls: two batches, the old one first.
	if err := cl.ProduceSync(ctx, old...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recent...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var start int64
	for ctx.Err() == nil {
		offs, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, ok := offs.Lookup(topic, 0); ok && o.Offset > 0 {
			start = o.Offset
			break
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by ctx
	}
	if start != 10 {
		t.Fatalf("log start offset %d after retention, want 10 (the old batch dropped, the new one kept); %v", start, ctx.Err())
	}
	cons := clientFor(t, c.Modes()[planner.SecurityPlaintext].ClientConfig, kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 5 && ctx.Err() == nil {
		cons.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "new-0,new-1,new-2,new-3,new-4" {
		t.Fatalf("read %q after retention, want the five new records", got)
	}
}

// TestHostAddress serves on another loopback address, as a remote broker
// host serves on its private address: every mode's fronts listen there,
// metadata advertises it and TLS verifies it.
func TestHostAddress(t *testing.T) {
	const host = "127.0.0.2"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Brokers: 2, Dir: t.TempDir(), Host: host})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, name := range planner.DirectModes() {
		m := c.Modes()[name]
		for _, addr := range m.Bootstrap {
			if !strings.HasPrefix(addr, host+":") {
				t.Errorf("%s front at %s, want on %s", name, addr, host)
			}
		}
		adm := kadm.NewClient(clientFor(t, m.ClientConfig))
		meta, err := adm.BrokerMetadata(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, b := range meta.Brokers {
			if b.Host != host {
				t.Errorf("%s: metadata advertises %s, want %s", name, b.Host, host)
			}
		}
	}
	if _, err := Start(ctx, Options{Host: "broker-0"}); err == nil || !strings.Contains(err.Error(), "want an IP address") {
		t.Fatalf("a host name was accepted: %v", err)
	}
}
