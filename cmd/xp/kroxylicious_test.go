package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/runner/loadgen"
)

// kroxyliciousSection is a TARGET.yaml's gateway: section naming the
// Kroxylicious release r (a file) with the in-memory KMS.
func kroxyliciousSection(r disttest.Release) string {
	return fmt.Sprintf("gateway:\n  kroxylicious: {url: %s, sha512: %s, kms: inmemory}\n", r.Path, r.SHA512)
}

// kroxyAttempt is what TestRunKroxylicious reads of an attempt.
type kroxyAttempt struct {
	security, transport, kind, outcome, errText string
	env                                         struct {
		Bootstrap []string              `json:"bootstrap"`
		Group     string                `json:"group"`
		Gateway   *endpoint.GatewayInfo `json:"gateway"`
		Broker    *target.Broker        `json:"broker"`
	}
}

// kroxyAttempts reads every attempt of db with its row's gateway fields.
func kroxyAttempts(t *testing.T, db string) []kroxyAttempt {
	t.Helper()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT a.environment, r.plan_row, coalesce(a.outcome, ''), coalesce(a.error, '') FROM attempt a JOIN row r ON r.run = a.run ORDER BY a.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []kroxyAttempt
	for rows.Next() {
		var a kroxyAttempt
		var envText, rowText string
		if err := rows.Scan(&envText, &rowText, &a.outcome, &a.errText); err != nil {
			t.Fatal(err)
		}
		var row struct {
			Security  string `json:"security"`
			Kind      string `json:"gateway_kind"`
			Transport string `json:"gateway_transport"`
		}
		if err := json.Unmarshal([]byte(envText), &a.env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(rowText), &row); err != nil {
			t.Fatal(err)
		}
		a.security, a.kind, a.transport = row.Security, row.Kind, row.Transport
		out = append(out, a)
	}
	return out
}

// kroxyGatewayHosts are the telemetry hosts of db that are Kroxylicious
// JVMs, sorted.
func kroxyGatewayHosts(t *testing.T, db string) []string {
	t.Helper()
	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT DISTINCT host FROM telemetry WHERE host LIKE 'kroxylicious-%' ORDER BY host`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var hosts []string
	for rows.Next() {
		var h string
		rows.Scan(&h)
		hosts = append(hosts, h)
	}
	return hosts
}

// kroxyliciousJVMs lists the running processes whose command line is
// Kroxylicious's (xp's launcher) with a config under dir.
func kroxyliciousJVMs(dir string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		if strings.Contains(cmd, "xp.launcher.Kroxylicious") && strings.Contains(cmd, dir) && alive(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

// alive says whether /proc/PID is a process that has not ended.
func alive(pid string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestRunKroxyliciousOnApacheKafka runs a campaign with xp run on one
// Apache Kafka broker (the 4.x release of out/dist) under the local
// target, proxy and encrypt through xp's builtin gateway and through
// Kroxylicious (the release of make kroxylicious-dist, its Record
// Encryption on the in-memory KMS), over tls, and proxy over sasl_ssl
// (the clients' SCRAM passed through to Kafka's SASL_SSL listener). Every
// row is done; each attempt names the gateway that ran (kroxylicious with
// its version, Java and heap, and kms inmemory for encrypt; builtin with
// its crypto) and the broker; every Kroxylicious JVM is sampled as a
// gateway. While the Kroxylicious encrypt row measures, its records read
// straight from the broker are ciphertext: none matches the digest its
// producer put in its header, each carries Kroxylicious's encryption
// header. No Kroxylicious JVM is left afterwards.
func TestRunKroxyliciousOnApacheKafka(t *testing.T) {
	t.Parallel()
	r4, kx := disttest.Kafka(t, 4), disttest.Kroxylicious(t)
	dir := t.TempDir()
	tgt := writeRunFile(t, dir, "kroxy.yaml", fmt.Sprintf("platform: local\nkafka: {heap: 384m, distribution: %s, sha512: %s}\n%s",
		r4.Path, r4.SHA512, kroxyliciousSection(kx)))
	plan := expandSpec(t, dir, "kroxy", fmt.Sprintf(`campaign: kroxy
seed: 11
replicates: 1
treatment: gateway_kind
baseline: builtin
factors:
  security: [proxy, encrypt]
  gateway_kind: [builtin, kroxylicious]
  gateway_transport: [tls, sasl_ssl]
fixed:
  platform: local
  brokers: 1
  kafka_version: %s
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 3
  drain_timeout_s: 10
exclude:
  - {security: encrypt, gateway_transport: sasl_ssl}
`, r4.Version))
	db := filepath.Join(dir, "kroxy.db")
	work := db + ".work"

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	raw := make(chan string, 1)
	go func() { raw <- checkAtRest(ctx, db, work) }()

	code, stdout, stderr := runXPEnv(t, nil, "run", plan, "--db", db, "--target", tgt)
	if code != exitOK {
		t.Fatalf("xp run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	select {
	case why := <-raw:
		if why != "" {
			t.Error(why)
		}
	case <-time.After(time.Minute):
		t.Error("the records of the Kroxylicious encrypt row were never read from the broker")
	}
	cancel()

	atts := kroxyAttempts(t, db)
	if len(atts) != 6 {
		t.Errorf("%d attempts, want 6 (proxy over tls and sasl_ssl, encrypt over tls, through each gateway)", len(atts))
	}
	for _, a := range atts {
		what := fmt.Sprintf("%s over %s through %s", a.security, a.transport, a.kind)
		if a.outcome != "done" {
			t.Errorf("%s: outcome %q %s", what, a.outcome, a.errText)
		}
		g, b := a.env.Gateway, a.env.Broker
		if b == nil || b.Kind != target.BrokerApache || b.Version != r4.Version {
			t.Errorf("%s: broker %+v, want apache %s", what, b, r4.Version)
		}
		if want := fmt.Sprintf("local brokers=1 apache=%s gateways=1 %s", r4.Version, a.kind); a.env.Group != want {
			t.Errorf("%s: group %q, want %q", what, a.env.Group, want)
		}
		switch {
		case g == nil || g.Kind != a.kind:
			t.Errorf("%s: gateway %+v, want kind %s", what, g, a.kind)
		case a.kind == "builtin" && g.Crypto != "std":
			t.Errorf("%s: gateway %+v, want builtin std", what, g)
		case a.kind == "kroxylicious" && (g.Version != kx.Version || !strings.Contains(g.Java, "version \"") || !slices.Contains(g.JVMFlags, "-Xmx512m")):
			t.Errorf("%s: gateway %+v, want Kroxylicious %s with its Java and heap", what, g, kx.Version)
		case a.kind == "kroxylicious" && (a.security == "encrypt") != (g.KMS == "inmemory"):
			t.Errorf("%s: gateway kms %q, want inmemory for encrypt only", what, g.KMS)
		}
	}
	hosts := kroxyGatewayHosts(t, db)
	if want := []string{"kroxylicious-encrypt", "kroxylicious-proxy", "kroxylicious-proxy.sasl_ssl"}; !slices.Equal(hosts, want) {
		t.Errorf("telemetry of Kroxylicious JVMs %v, want %v", hosts, want)
	}
	if left := kroxyliciousJVMs(work); len(left) > 0 {
		t.Errorf("Kroxylicious JVMs %v left after xp run", left)
	}
}

// checkAtRest waits until the Kroxylicious encrypt row of db measures,
// then reads the newest topic of xp's load (the row's) straight from the
// broker over the group's plaintext listener (work/group-N) and says what
// is wrong with it ("" when every record read is ciphertext: its value no
// longer matches the digest its producer put in its header, and it
// carries Kroxylicious's encryption header).
func checkAtRest(ctx context.Context, db, work string) string {
	for !measuringKroxyEncrypt(db) {
		if ctx.Err() != nil {
			return "the Kroxylicious encrypt row never measured"
		}
		time.Sleep(50 * time.Millisecond)
	}
	groups, _ := filepath.Glob(filepath.Join(work, "group-*", "plaintext.properties"))
	if len(groups) == 0 {
		return "no group's plaintext client config under " + work
	}
	sort.Strings(groups)
	props, err := kafkaconf.ReadClientConfig(groups[len(groups)-1])
	if err != nil {
		return err.Error()
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return err.Error()
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(rctx)
	if err != nil {
		return "listing the broker's topics: " + err.Error()
	}
	var newest string
	for _, name := range topics.Names() {
		// xp-UNIXNANO-XXXX: the newest is the measuring row's.
		if strings.HasPrefix(name, "xp-") && name > newest {
			newest = name
		}
	}
	if newest == "" {
		return fmt.Sprintf("no topic of xp's load on the broker: %v", topics.Names())
	}
	cl.AddConsumeTopics(newest)
	const want = 50
	var seen, marked, changed int
	for seen < want && rctx.Err() == nil {
		cl.PollFetches(rctx).EachRecord(func(r *kgo.Record) {
			seen++
			var digest []byte
			for _, h := range r.Headers {
				switch h.Key {
				case loadgen.HeaderDigest:
					digest = h.Value
				case "kroxylicious.io/encryption":
					marked++
				}
			}
			if len(digest) != 8 || binary.BigEndian.Uint64(digest) != loadgen.Digest(r.Key, r.Value) {
				changed++
			}
		})
	}
	if seen < want || changed != seen || marked != seen {
		return fmt.Sprintf("of %d records of %s read from the broker (want %d), %d differ from what was produced and %d carry Kroxylicious's encryption header: want all",
			seen, newest, want, changed, marked)
	}
	return ""
}

// measuringKroxyEncrypt reports whether db has an attempt of a
// Kroxylicious encrypt row in its measurement phase.
func measuringKroxyEncrypt(db string) bool {
	raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return false
	}
	defer raw.Close()
	var n int
	err = raw.QueryRow(`SELECT count(*) FROM attempt WHERE phase = 'measure' AND outcome IS NULL
		AND json_extract(environment, '$.security') = 'encrypt' AND json_extract(environment, '$.gateway.kind') = 'kroxylicious'`).Scan(&n)
	return err == nil && n > 0
}

// TestRunKroxyliciousStartFails runs Kroxylicious in front of the
// embedded cluster from a release without its Record Encryption filter:
// the group of proxy and encrypt fails its bring-up (the encrypt gateway
// exits at start-up, the proxy one is stopped) with the end of the encrypt
// gateway's log, which names the filter, in each of its rows' attempts;
// the campaign goes on, and the next group, proxy through two Kroxylicious
// JVMs (gateways: 2), runs done with both in its bootstrap and both
// sampled. No Kroxylicious JVM is left.
func TestRunKroxyliciousStartFails(t *testing.T) {
	t.Parallel()
	kx := disttest.Kroxylicious(t)
	dir := t.TempDir()
	lame := withoutEntry(t, kx.Path, filepath.Join(dir, "kroxylicious-lame.tar.gz"), "/libs/kroxylicious-record-encryption-")
	sum, err := release.SHA512File(lame)
	if err != nil {
		t.Fatal(err)
	}
	tgt := writeRunFile(t, dir, "lame.yaml", "platform: local\n"+kroxyliciousSection(disttest.Release{Path: lame, SHA512: sum}))
	plan := expandSpec(t, dir, "lame", `campaign: lame
seed: 5
replicates: 1
treatment: gateways
baseline: 1
factors:
  security: [proxy, encrypt]
  gateways: [1, 2]
fixed:
  platform: local
  brokers: 1
  gateway_kind: kroxylicious
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 10
exclude:
  - {gateways: 2, security: encrypt}
`)
	db := filepath.Join(dir, "lame.db")
	// A cache of its own: the lame release is unpacked there, not in the
	// user's.
	code, stdout, stderr := runXPEnv(t, map[string]string{"XDG_CACHE_HOME": filepath.Join(dir, "cache")}, "run", plan, "--db", db, "--target", tgt)
	if code != exitInvalidRuns {
		t.Fatalf("xp run: exit %d, want %d (failed runs)\nstdout %s\nstderr %s", code, exitInvalidRuns, stdout, stderr)
	}
	var failed, done int
	for _, a := range kroxyAttempts(t, db) {
		switch a.outcome {
		case "failed":
			failed++
			for _, w := range []string{"bring up local brokers=1", "gateways=1 kroxylicious", "kroxylicious gateway encrypt: kroxylicious exited at start-up",
				"Unknown io.kroxylicious.proxy.filter.FilterFactory plugin instance for name 'RecordEncryption'"} {
				if !strings.Contains(a.errText, w) {
					t.Errorf("%s's failed attempt: error lacks %q:\n%s", a.security, w, a.errText)
				}
			}
			if strings.Contains(a.errText, "\tat com.fasterxml") {
				t.Errorf("the error quotes Java stack frames:\n%s", a.errText)
			}
		case "done":
			done++
			if g := a.env.Gateway; a.security != "proxy" || len(a.env.Bootstrap) != 2 || g == nil || g.Kind != "kroxylicious" || a.env.Broker == nil || a.env.Broker.Kind != target.BrokerKfake {
				t.Errorf("done: %s through %v, gateway %+v, broker %+v; want proxy through two Kroxylicious in front of kfake", a.security, a.env.Bootstrap, g, a.env.Broker)
			}
		default:
			t.Errorf("%s: outcome %q", a.security, a.outcome)
		}
	}
	// Each failed row is tried again (a new bring-up, failing the same way).
	if failed < 2 || done != 1 {
		t.Errorf("%d failed and %d done attempts, want the 2 rows of the lame group failed and the proxy row of gateways 2 done", failed, done)
	}
	if hosts, want := kroxyGatewayHosts(t, db), []string{"kroxylicious-proxy-1", "kroxylicious-proxy-2"}; !slices.Equal(hosts, want) {
		t.Errorf("telemetry of Kroxylicious JVMs %v, want %v", hosts, want)
	}
	if left := kroxyliciousJVMs(db + ".work"); len(left) > 0 {
		t.Errorf("Kroxylicious JVMs %v left after xp run", left)
	}
}

// withoutEntry copies the gzip'd tar src to dst without the entries whose
// name contains drop.
func withoutEntry(t *testing.T, src, dst, drop string) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	zw := gzip.NewWriter(out)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	dropped := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(h.Name, drop) {
			dropped = true
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if !dropped {
		t.Fatalf("%s has no entry %q", src, drop)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
