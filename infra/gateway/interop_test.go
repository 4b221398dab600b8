package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
)

const (
	kcatPath   = "/usr/bin/kcat"
	pythonPath = "/usr/bin/python3"
)

// librdkafkaProps are the properties a librdkafka client (kcat, confluent-
// kafka-python) needs for transport.
func librdkafkaProps(t *testing.T, transport string) map[string]string {
	p := sharedPKI(t)
	props := map[string]string{"security.protocol": "plaintext"}
	switch transport {
	case planner.SecurityTLS, planner.SecurityMTLS:
		props["security.protocol"] = "ssl"
	case planner.SecuritySASLSSL:
		props["security.protocol"] = "sasl_ssl"
		props["sasl.mechanisms"] = "SCRAM-SHA-256"
		props["sasl.username"] = saslUser
		props["sasl.password"] = saslPass
	}
	if transport != planner.SecurityPlaintext {
		props["ssl.ca.location"] = p.ca.CAPath()
	}
	if transport == planner.SecurityMTLS {
		props["ssl.certificate.location"] = p.clientCert
		props["ssl.key.location"] = p.clientKey
	}
	return props
}

// interopCase is one client-leg transport with its upstream.
var interopCases = []struct {
	name             string
	client, upstream string
	sasl             bool
}{
	{"plaintext", planner.SecurityPlaintext, planner.SecurityPlaintext, false},
	{"tls", planner.SecurityTLS, planner.SecurityTLS, false},
	{"mtls", planner.SecurityMTLS, planner.SecurityMTLS, false},
	{"sasl_ssl", planner.SecuritySASLSSL, planner.SecurityTLS, true},
}

// directRecords reads topic straight from the cluster with franz-go.
func directRecords(t *testing.T, addrs []string, upstream string, sasl bool, topic string, n int) []record {
	tr := upstream
	if sasl {
		tr = planner.SecuritySASLSSL
	}
	return consume(t, franzOpts(t, addrs, tr), topic, n)
}

// TestKcat produces and consumes with kcat (librdkafka) through the gateway
// on every client-leg transport; what kcat reads through the gateway must
// equal a direct franz-go read.
func TestKcat(t *testing.T) {
	for _, tc := range interopCases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 2, transport: tc.upstream, sasl: tc.sasl})
			g := startGateway(t, gatewayConfig(t, kf, tc.client, tc.upstream))
			const n = 50
			var args []string
			for k, v := range librdkafkaProps(t, tc.client) {
				args = append(args, "-X", k+"="+v)
			}
			var in bytes.Buffer
			for i := range n {
				fmt.Fprintf(&in, "k%d|value-%d-%s\n", i, i, strings.Repeat("x", i))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			prod := exec.CommandContext(ctx, kcatPath, append([]string{"-b", g.Bootstrap(), "-t", "kcat", "-P", "-K", "|", "-X", "acks=all"}, args...)...)
			prod.Stdin = &in
			if out, err := prod.CombinedOutput(); err != nil {
				t.Fatalf("kcat produce: %v\n%s", err, out)
			}
			cons := exec.CommandContext(ctx, kcatPath, append([]string{"-b", g.Bootstrap(), "-t", "kcat", "-C", "-o", "beginning", "-e", "-q", "-f", "%p|%o|%k|%s\n"}, args...)...)
			var stderr bytes.Buffer
			cons.Stderr = &stderr
			out, err := cons.Output()
			if err != nil {
				t.Fatalf("kcat consume: %v\n%s", err, stderr.String())
			}
			got := parseLines(t, string(out))
			direct := directRecords(t, kf.ListenAddrs(), tc.upstream, tc.sasl, "kcat", n)
			want := make([]string, 0, len(direct))
			for _, r := range direct {
				want = append(want, fmt.Sprintf("%d|%d|%s|%s", r.Partition, r.Offset, r.Key, r.Value))
			}
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("kcat through the gateway read\n%s\ndirect read\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func parseLines(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// pythonClient produces n records and consumes them back in a consumer
// group with confluent-kafka-python, printing one JSON object per record.
const pythonClient = `
import json, sys
from confluent_kafka import Producer, Consumer
conf = json.loads(sys.argv[1]); topic = sys.argv[2]; n = int(sys.argv[3])
p = Producer(dict(conf, **{"acks": "all"}))
errs = []
def cb(err, msg):
    if err is not None: errs.append(str(err))
for i in range(n):
    p.produce(topic, key=("py-%d" % i).encode(), value=("python-%d-" % i + "y" * i).encode(), headers=[("i", str(i).encode())], on_delivery=cb)
    p.poll(0)
left = p.flush(30)
if left or errs:
    print("produce failed: %d unflushed, errors %s" % (left, errs[:3]), file=sys.stderr); sys.exit(1)
c = Consumer(dict(conf, **{"group.id": "py-group", "auto.offset.reset": "earliest", "enable.auto.commit": True}))
c.subscribe([topic])
got = 0
import time
deadline = time.time() + 40
while got < n and time.time() < deadline:
    m = c.poll(1.0)
    if m is None: continue
    if m.error():
        print("consume error: %s" % m.error(), file=sys.stderr); continue
    print(json.dumps({"p": m.partition(), "o": m.offset(), "k": m.key().decode(), "v": m.value().decode(), "h": [[k, v.decode()] for k, v in (m.headers() or [])]}))
    got += 1
c.close()
sys.exit(0 if got == n else 2)
`

// TestPythonConfluentKafka produces and consumes (in a consumer group) with
// Debian's python3-confluent-kafka through the gateway on every transport.
func TestPythonConfluentKafka(t *testing.T) {
	for _, tc := range interopCases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 2, transport: tc.upstream, sasl: tc.sasl})
			g := startGateway(t, gatewayConfig(t, kf, tc.client, tc.upstream))
			const n = 40
			props := librdkafkaProps(t, tc.client)
			props["bootstrap.servers"] = g.Bootstrap()
			conf, _ := json.Marshal(props)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, pythonPath, "-c", pythonClient, string(conf), "python", strconv.Itoa(n))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("python client: %v\n%s", err, stderr.String())
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var m struct {
					P int32
					O int64
					K string
					V string
					H [][2]string
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("python output %q: %v", l, err)
				}
				got = append(got, fmt.Sprintf("%d|%d|%s|%s|i=%x;", m.P, m.O, m.K, m.V, m.H[0][1]))
			}
			sort.Strings(got)
			direct := directRecords(t, kf.ListenAddrs(), tc.upstream, tc.sasl, "python", n)
			var want []string
			for _, r := range direct {
				want = append(want, fmt.Sprintf("%d|%d|%s|%s|%s", r.Partition, r.Offset, r.Key, r.Value, r.Headers))
			}
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("python through the gateway read\n%s\ndirect read\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
