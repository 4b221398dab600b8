package local

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// debianPython is the interpreter with Debian's python3-confluent-kafka
// and python3-kafka.
const debianPython = "/usr/bin/python3"

// fpeClients produces (confluent-kafka) or consumes (confluent-kafka or
// kafka-python) through a mode, one JSON line per record with the value
// and key in base64, so that bytes compare exactly.
const fpeClients = `
import base64, json, sys, time
conf = json.loads(sys.argv[1]); op = sys.argv[2]; topic = sys.argv[3]; n = int(sys.argv[4])
b64 = lambda b: None if b is None else base64.b64encode(b).decode()
if op == "produce":
    from confluent_kafka import Producer
    p = Producer(dict(conf, **{"acks": "all", "linger.ms": 5}))
    errs = []
    def cb(err, msg):
        if err is not None: errs.append(str(err))
    for line in sys.stdin:
        r = json.loads(line)
        p.produce(topic, key=base64.b64decode(r["k"]), value=base64.b64decode(r["v"]), on_delivery=cb)
        p.poll(0)
    left = p.flush(30)
    if left or errs:
        print("produce failed: %d unflushed, errors %s" % (left, errs[:3]), file=sys.stderr); sys.exit(1)
    sys.exit(0)
got = 0
deadline = time.time() + 40
if op == "confluent":
    from confluent_kafka import Consumer
    c = Consumer(dict(conf, **{"group.id": "fpe-confluent", "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    while got < n and time.time() < deadline:
        m = c.poll(1.0)
        if m is None: continue
        if m.error():
            print("consume error: %s" % m.error(), file=sys.stderr); continue
        print(json.dumps({"p": m.partition(), "o": m.offset(), "k": b64(m.key()), "v": b64(m.value())})); got += 1
    c.close()
else:
    from kafka import KafkaConsumer
    c = KafkaConsumer(topic, bootstrap_servers=conf["bootstrap.servers"].split(","), security_protocol="SSL",
                      ssl_cafile=conf["ssl.ca.location"], group_id="fpe-kafka-python", auto_offset_reset="earliest",
                      consumer_timeout_ms=40000)
    for m in c:
        print(json.dumps({"p": m.partition, "o": m.offset, "k": b64(m.key), "v": b64(m.value)})); got += 1
        if got == n: break
    c.close()
sys.exit(0 if got == n else 2)
`

type pyRecord struct {
	P int32  `json:"p"`
	O int64  `json:"o"`
	K string `json:"k"`
	V string `json:"v"`
}

func runPython(t *testing.T, ctx context.Context, stdin []byte, args ...string) []pyRecord {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		t.Fatalf("%s: %v (install Debian's python3, python3-confluent-kafka and python3-kafka)", debianPython, err)
	}
	cmd := exec.CommandContext(ctx, debianPython, append([]string{"-c", fpeClients}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python %s: %v\n%s", args[1], err, stderr.String())
	}
	var recs []pyRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r pyRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("python output %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestFieldEncryptFPEInterop runs the embedded cluster's field_encrypt.fpe
// mode with independent clients: Python's confluent-kafka produces JSON
// records through it; what rests on the broker (read through the mode's
// upstream) keeps each ssn's format (ddd-dd-dddd) with other digits, and
// nothing else of the value; kcat, confluent-kafka and kafka-python read
// through the gateway exactly the bytes produced.
func TestFieldEncryptFPEInterop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t, 1)
	g, err := StartGatewayMode(ctx, c, GatewayModeOptions{Security: planner.SecurityFieldEncrypt, Cipher: planner.FieldCipherFPE})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	const name = "field_encrypt.fpe"
	m, ok := c.Modes()[name]
	if !ok || m.Upstream == nil {
		t.Fatalf("mode %s not registered: %v", name, c.ModeNames())
	}
	props, err := kafkaconf.ReadClientConfig(m.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	conf, _ := json.Marshal(props)
	const topic, n = "fpe-interop", 60
	if _, err := kadm.NewClient(clientFor(t, m.Upstream.ClientConfig)).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	type rec struct{ key, value string }
	var produced []rec
	var in bytes.Buffer
	for i := range n {
		v := fmt.Sprintf(`{"id":"%08d-1c1e-4a2b-8d0b-0d3c2b1a0f9e","status":"ACTIVE","ssn":"%03d-%02d-%04d","notes":"caf\u00e9 n\u00b0%d"}`, i, 100+i, i%100, 1000+i*37, i)
		k := fmt.Sprintf("key-%d", i)
		produced = append(produced, rec{k, v})
		fmt.Fprintf(&in, `{"k":%q,"v":%q}`+"\n", base64.StdEncoding.EncodeToString([]byte(k)), base64.StdEncoding.EncodeToString([]byte(v)))
	}
	runPython(t, ctx, in.Bytes(), string(conf), "produce", topic, fmt.Sprint(n))
	want := map[string]string{}
	for _, r := range produced {
		want[r.key] = r.value
	}

	// At rest: the same JSON with another ssn of the same format.
	format := regexp.MustCompile(`^[0-9]{3}-[0-9]{2}-[0-9]{4}$`)
	up := clientFor(t, m.Upstream.ClientConfig, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var rest []*kgo.Record
	for len(rest) < n {
		fs := up.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading what rests on the broker: %v after %d records", err, len(rest))
		}
		rest = append(rest, fs.Records()...)
	}
	for _, r := range rest {
		orig := want[string(r.Key)]
		var a, b map[string]string
		if err := json.Unmarshal(r.Value, &a); err != nil {
			t.Fatalf("record %s rests as no JSON: %q", r.Key, r.Value)
		}
		_ = json.Unmarshal([]byte(orig), &b)
		if len(r.Value) != len(orig) || a["id"] != b["id"] || a["status"] != b["status"] || a["notes"] != b["notes"] {
			t.Fatalf("record %s: rests as %q, produced %q: only ssn may change", r.Key, r.Value, orig)
		}
		if !format.MatchString(a["ssn"]) || a["ssn"] == b["ssn"] {
			t.Fatalf("record %s: ssn %q rests as %q", r.Key, b["ssn"], a["ssn"])
		}
		if h := r.Headers[len(r.Headers)-1]; h.Key != "xp.enc" || string(h.Value) != "f1;k1:ssn" {
			t.Fatalf("record %s: marker %s=%q", r.Key, h.Key, h.Value)
		}
	}

	// Through the gateway: every client reads what was produced, byte for
	// byte, at the offsets the broker holds.
	offsets := map[string]string{}
	for _, r := range rest {
		offsets[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Key)
	}
	check := func(client string, got []pyRecord) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s read %d records through %s, want %d", client, len(got), name, n)
		}
		for _, r := range got {
			k, _ := base64.StdEncoding.DecodeString(r.K)
			v, _ := base64.StdEncoding.DecodeString(r.V)
			if offsets[fmt.Sprintf("%d/%d", r.P, r.O)] != string(k) || want[string(k)] != string(v) {
				t.Fatalf("%s read %d/%d key %q value %q; produced %q", client, r.P, r.O, k, v, want[string(k)])
			}
		}
	}
	check("confluent-kafka", runPython(t, ctx, nil, string(conf), "confluent", topic, fmt.Sprint(n)))
	check("kafka-python", runPython(t, ctx, nil, string(conf), "kafka-python", topic, fmt.Sprint(n)))

	cmd := exec.CommandContext(ctx, "kcat", "-F", m.ClientConfig, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %K %S\n%k%s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat through %s: %v\n%s", name, err, stderr.String())
	}
	var got []pyRecord
	for rd := bufio.NewReader(bytes.NewReader(out)); ; {
		var r pyRecord
		var kl, vl int
		if _, err := fmt.Fscanf(rd, "%d %d %d %d\n", &r.P, &r.O, &kl, &vl); err != nil {
			break
		}
		b := make([]byte, kl+vl)
		if _, err := io.ReadFull(rd, b); err != nil {
			t.Fatalf("kcat output: %v", err)
		}
		r.K, r.V = base64.StdEncoding.EncodeToString(b[:kl]), base64.StdEncoding.EncodeToString(b[kl:])
		got = append(got, r)
	}
	slices.SortFunc(got, func(a, b pyRecord) int { return strings.Compare(fmt.Sprint(a.P, a.O), fmt.Sprint(b.P, b.O)) })
	check("kcat", got)
}
