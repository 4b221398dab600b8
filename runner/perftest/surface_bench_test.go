package perftest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kdc"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// surfaceHeap is the heap of every broker of the surface benchmark, the
// one BenchmarkProducerPerformance gives its broker.
const surfaceHeap = "1g"

// surfaceChurns are the connection_churn levels measured: records each
// producer sends before it reconnects.
var surfaceChurns = []int{1000, 100}

// surfaceACLs are the authorizer sizes measured: ACLs for other
// principals besides the run's own.
var surfaceACLs = []int{10, 1000, 100_000}

// surfaceCase is one load of the surface benchmark: the load generator
// saturated against one broker through one client config, with the row
// fields it applies (tls_version, tls_cipher, sasl_mechanism,
// connection_churn) and the certificate key its connections must see.
type surfaceCase struct {
	broker          *kafkaproc.Cluster
	props           map[string]string
	version, cipher string
	mech            string
	churn           int
	key             string
}

// surfaceTrials are a case's measurements, one per round.
type surfaceTrials struct {
	rate, p50, p99, cpu, handshakes, reconnectP99 []float64
}

// surfaceComparison is one row of the benchmark's output: case against
// base in dimension dim, named setting and baseline.
type surfaceComparison struct {
	dim, setting, baseline string
	c, base                string // case ids
}

// BenchmarkSecuritySurface measures what each setting of Kafka's security
// surface costs against its own baseline, on single Apache Kafka 4
// brokers (local JVMs from out/dist, with xp's OAuth identity provider and
// an MIT KDC), side by side in one run. xp's load generator (franz-go)
// runs saturated (1 KiB, acks all, one producer, no consumers) and each
// comparison reports the setting's throughput, publish p50 and p99 and
// broker CPU per message, the throughput penalty, p99 penalty and broker
// CPU added against the baseline and, with churn, the handshakes per
// second and the reconnect p99:
//
//   - sasl_mechanism: each mechanism on a steady connection and at a
//     reconnect every 100 records, against scram-sha-512 and against tls
//     at the same churn;
//   - authorizer: KRaft's StandardAuthorizer holding 10, 1,000 and 100,000
//     ACLs for other principals, against none, on sasl_ssl (scram-sha-512);
//   - tls: tls_version 1.2 and 1.3 and each tls_cipher under 1.2 (the
//     client narrows the suite; the broker's listener stays open), against
//     default, steady; tls_key rsa2048 and rsa4096 against ecdsa-p256 at a
//     reconnect every 100 records, where the key costs (the handshake);
//   - connection_churn: 1,000 and 100 records per connection against 0, on
//     tls, mtls and sasl_ssl.
//
// Brokers: one without an authorizer (every case but the others), one
// with the authorizer, whose ACLs grow between its rounds, and one per
// RSA key. The main rounds visit every case once, each round in another
// order (rotated, and reversed every other round) so that drift does not
// pass for a cost; the authorizer's rounds alternate it with its baseline
// on the first broker, three rounds per size. Values are medians of three
// rounds. XP_BENCH_DURATION sets each run's measured seconds (default
// 2s, after 1 s of warm-up; twice that with churn).
func BenchmarkSecuritySurface(b *testing.B) {
	d := benchDuration(b, 2*time.Second)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	idp, err := oauthidp.Start(oauthidp.Options{ClientID: "xp", ClientSecret: "xp-bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer idp.Close()
	k, err := kdc.Start(ctx, kdc.Options{Dir: filepath.Join(b.TempDir(), "kdc")})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	keytab, err := k.Keytab(ctx, filepath.Join(b.TempDir(), "xp.keytab"), "xp")
	if err != nil {
		b.Fatal(err)
	}
	primary := kafkatest.Start(b, kafkatest.Options{Heap: surfaceHeap, KDC: k,
		OAuth: &kafkaconf.OAuthServer{JWKSURL: idp.JWKSURL(), Issuer: idp.Issuer(), Audience: oauthidp.Audience}})
	acl := kafkatest.Start(b, kafkatest.Options{Heap: surfaceHeap, Authorizer: true})
	rsa := map[string]*kafkaproc.Cluster{}
	for _, key := range []string{planner.TLSKeyRSA2048, planner.TLSKeyRSA4096} {
		rsa[key] = kafkatest.Start(b, kafkatest.Options{Heap: surfaceHeap, TLSKey: key})
	}
	b.Logf("brokers, identity provider and KDC up in %s", time.Since(start).Round(time.Second))

	sasl := readProps(b, primary.Modes()[planner.SecuritySASLSSL].ClientConfig)
	identity := map[string]map[string]string{
		planner.SASLOAuthBearer: kafkaconf.WithIdentity(sasl, planner.KafkaSASLMechanism(planner.SASLOAuthBearer), map[string]string{
			kafkaconf.OAuthMethod: "oidc", kafkaconf.OAuthTokenURL: idp.TokenURL(),
			kafkaconf.OAuthClientID: "xp", kafkaconf.OAuthClientSecret: "xp-bench"}),
		planner.SASLGSSAPI: kafkaconf.WithIdentity(sasl, planner.KafkaSASLMechanism(planner.SASLGSSAPI), map[string]string{
			kafkaconf.KerberosPrincipal: "xp@" + k.Realm, kafkaconf.KerberosKeytab: keytab,
			kafkaconf.KerberosKrb5Conf: k.Krb5Conf, kafkaconf.KerberosServiceName: kafkaproc.KerberosService}),
	}
	mechProps := func(mech string) map[string]string {
		if p, ok := identity[mech]; ok {
			return p
		}
		return sasl
	}
	modeProps := func(c *kafkaproc.Cluster, mode string) map[string]string {
		return readProps(b, c.Modes()[mode].ClientConfig)
	}

	cases := map[string]surfaceCase{}
	var order []string
	add := func(id string, c surfaceCase) {
		cases[id] = c
		order = append(order, id)
	}
	var cmp []surfaceComparison
	compare := func(dim, setting, baseline, c, base string) {
		cmp = append(cmp, surfaceComparison{dim, setting, baseline, c, base})
	}
	churnName := func(name string, churn int) string {
		if churn == 0 {
			return name
		}
		return name + "_churn_" + strconv.Itoa(churn)
	}
	mechs := []string{planner.SASLScramSHA512, planner.SASLScramSHA256, planner.SASLPlain, planner.SASLOAuthBearer, planner.SASLGSSAPI}

	// sasl_mechanism, steady and at the highest churn, against
	// scram-sha-512 and tls at the same churn.
	for _, churn := range []int{0, surfaceChurns[len(surfaceChurns)-1]} {
		tlsID := churnName("tls", churn)
		add(tlsID, surfaceCase{broker: primary, props: modeProps(primary, planner.SecurityTLS), churn: churn})
		for _, mech := range mechs {
			id := churnName(mech, churn)
			add(id, surfaceCase{broker: primary, props: mechProps(mech), mech: mech, churn: churn})
			if mech != planner.SASLScramSHA512 {
				compare("sasl_mechanism", id, churnName(planner.SASLScramSHA512, churn), id, churnName(planner.SASLScramSHA512, churn))
			}
			compare("sasl_mechanism", id, tlsID, id, tlsID)
		}
	}
	// tls: version and cipher steady, key at the highest churn.
	for _, v := range []struct{ version, cipher string }{
		{planner.TLSVersion12, ""}, {planner.TLSVersion13, ""},
		{planner.TLSVersion12, planner.TLSCipherAES128GCM}, {planner.TLSVersion12, planner.TLSCipherAES256GCM},
		{planner.TLSVersion12, planner.TLSCipherChaCha20},
	} {
		id := "tls_" + v.version
		if v.cipher != "" {
			id += "_" + v.cipher
		}
		add(id, surfaceCase{broker: primary, props: modeProps(primary, planner.SecurityTLS), version: v.version, cipher: v.cipher})
		compare("tls", id[len("tls_"):], planner.TLSDefault, id, "tls")
	}
	hi := surfaceChurns[len(surfaceChurns)-1]
	cases[churnName("tls", hi)] = withKey(cases[churnName("tls", hi)], planner.TLSKeyECDSAP256)
	for _, key := range []string{planner.TLSKeyRSA2048, planner.TLSKeyRSA4096} {
		id := churnName(key, hi)
		add(id, surfaceCase{broker: rsa[key], props: modeProps(rsa[key], planner.SecurityTLS), churn: hi, key: key})
		compare("tls", id, churnName(planner.TLSKeyECDSAP256, hi), id, churnName("tls", hi))
	}
	// connection_churn on each mode that authenticates or encrypts.
	for _, mode := range []string{planner.SecurityTLS, planner.SecurityMTLS, planner.SecuritySASLSSL} {
		base := mode
		if mode == planner.SecuritySASLSSL {
			base = planner.SASLScramSHA512
		}
		if _, ok := cases[base]; !ok {
			add(base, surfaceCase{broker: primary, props: modeProps(primary, mode)})
		}
		for _, churn := range surfaceChurns {
			id := churnName(base, churn)
			if _, ok := cases[id]; !ok {
				c := cases[base]
				c.churn = churn
				add(id, c)
			}
			compare("connection_churn", mode+"_"+strconv.Itoa(churn), mode+"_0", id, base)
		}
	}

	aclCase := surfaceCase{broker: acl, props: modeProps(acl, planner.SecuritySASLSSL), mech: planner.SASLScramSHA512}
	s := &surfaceRunner{b: b, ctx: ctx, d: d, trials: map[string]*surfaceTrials{}}
	// An unmeasured pass first: a fresh JVM's first handshakes and
	// produce requests run interpreted code, many times slower than
	// later ones.
	for _, id := range order {
		s.warm(id, cases[id])
	}
	s.warm("acl", aclCase)
	b.Logf("warm-up pass over %d cases in %s", len(order)+1, time.Since(start).Round(time.Second))
	for round := range 3 {
		for _, i := range surfaceOrder(len(order), round) {
			s.run(order[i], cases[order[i]])
		}
	}
	b.Logf("%d cases, 3 rounds, in %s", len(order), time.Since(start).Round(time.Second))

	// authorizer: each size, three rounds against none, the ACLs grown
	// between sizes.
	admin := modeProps(acl, planner.SecurityTLS)
	own := countACLs(b, ctx, admin)
	for _, n := range surfaceACLs {
		t0 := time.Now()
		// CreateACLs lays n out as the first of a larger n, and Kafka
		// keeps one of each: the ACLs grow to n.
		if err := acl.CreateACLs(ctx, n); err != nil {
			b.Fatal(err)
		}
		if got := countACLs(b, ctx, admin); got != own+n {
			b.Fatalf("the authorizer holds %d ACLs after growing to %d for other principals besides the run's %d", got, n, own)
		}
		b.Logf("%d ACLs for other principals in %s", n, time.Since(t0).Round(time.Second))
		setting, none := "acl_"+strconv.Itoa(n), "none_"+strconv.Itoa(n)
		for round := range 3 {
			pair := []string{none, setting}
			if round%2 == 1 {
				pair[0], pair[1] = pair[1], pair[0]
			}
			for _, id := range pair {
				if id == none {
					s.run(id, cases[planner.SASLScramSHA512])
				} else {
					s.run(id, aclCase)
				}
			}
		}
		compare("authorizer", setting, "none", setting, none)
	}
	b.Logf("in all %s", time.Since(start).Round(time.Second))

	for _, c := range cmp {
		b.Run(c.dim+"/"+c.setting+"/vs_"+c.baseline, func(b *testing.B) {
			s.report(b, c)
		})
	}
}

func withKey(c surfaceCase, key string) surfaceCase {
	c.key = key
	return c
}

// surfaceOrder is the order round visits n cases in: every case once,
// backwards in odd rounds, so a case that follows its baseline in one
// round precedes it in the next; and from three cases on, starting a
// third further along each round, so no case is always first.
func surfaceOrder(n, round int) []int {
	out := make([]int, n)
	off := 0
	if n >= 3 {
		off = round * n / 3
	}
	for i := range n {
		j := i
		if round%2 == 1 {
			j = n - 1 - i
		}
		out[i] = (j + off) % n
	}
	return out
}

// surfaceRunner runs cases and keeps their trials.
type surfaceRunner struct {
	b      *testing.B
	ctx    context.Context
	d      time.Duration
	trials map[string]*surfaceTrials
}

// surfaceInFlight bounds the records in flight of a saturated run: 4 MiB
// of 1 KiB records, 32 batches of 128 KiB over the 6 partitions, enough
// to saturate one broker on loopback, and few enough that a stall of the
// shared machine does not leave a 2 s window without acknowledgements
// (the default, 32 MiB, as ProducerPerformance's buffer.memory, would).
const surfaceInFlight = 4096

// surfaceChurnWindow lengthens the window of a run with churn: its rate
// and its reconnect percentiles are made of few reconnects.
const surfaceChurnWindow = 2

// warm runs case c once for a second, unmeasured; it must not fail, but
// its health is not judged (a cold broker may time records out).
func (s *surfaceRunner) warm(id string, c surfaceCase) {
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Minute)
	defer cancel()
	if _, err := loadgen.Run(ctx, s.config(c, 500*time.Millisecond, time.Second)); err != nil {
		s.b.Fatalf("%s (warm-up): %v", id, err)
	}
}

// config is the load generator's configuration of case c: saturated (1
// KiB, acks all, one producer, no consumers) for warm-up then d.
func (s *surfaceRunner) config(c surfaceCase, warmup, d time.Duration) loadgen.Config {
	return loadgen.Config{ClientConfig: c.props, Rate: 0, Concurrency: surfaceInFlight, MessageSize: benchSize,
		LingerMs: benchLinger, BatchBytes: benchBatch, Acks: benchAcks, Partitions: 6, ConsumerGroups: 0,
		Warmup: warmup, Duration: d, DrainTimeout: 30 * time.Second, Seed: 1,
		TLSVersion: c.version, TLSCipher: c.cipher, SASLMechanism: c.mech, ConnectionChurn: c.churn}
}

// run runs case c once, saturated, as trial of id: its publish rate and
// latency, the broker's CPU per record in the measurement window, and
// with churn its handshakes. The run must be healthy and its connections
// must have negotiated what c asks.
func (s *surfaceRunner) run(id string, c surfaceCase) {
	b := s.b
	d := s.d
	if c.churn > 0 {
		d *= surfaceChurnWindow
	}
	w := &cpuWindow{pid: c.broker.Brokers()[0].Pid, d: d}
	cfg := s.config(c, time.Second, d)
	cfg.OnPhase = w.onPhase
	ctx, cancel := context.WithTimeout(s.ctx, d+2*time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		w.stop()
		b.Fatalf("%s: %v", id, err)
	}
	cpu, ok := w.used()
	switch {
	case !res.Healthy:
		b.Fatalf("%s: unhealthy: %v", id, res.Reasons)
	case !ok || res.Published == 0:
		b.Fatalf("%s: the broker's CPU not read at both ends of the window (%v), %d records in it", id, ok, res.Published)
	}
	if why := surfaceMismatch(c, res.Connections); why != "" {
		b.Fatalf("%s: %s", id, why)
	}
	t := s.trials[id]
	if t == nil {
		t = &surfaceTrials{}
		s.trials[id] = t
	}
	t.rate = append(t.rate, res.PublishRate)
	t.p50 = append(t.p50, res.PublishLatencyMs.P50)
	t.p99 = append(t.p99, res.PublishLatencyMs.P99)
	t.cpu = append(t.cpu, float64(cpu.Nanoseconds())/1e3/float64(res.Published))
	t.handshakes = append(t.handshakes, res.Connections.HandshakesPerS)
	t.reconnectP99 = append(t.reconnectP99, res.Connections.ReconnectMs.P99)
}

// cpuWindow reads process pid's CPU time at both ends of a load run's
// measurement window, which starts as the warm-up ends (the load
// generator's OnPhase says when) and lasts d.
type cpuWindow struct {
	pid    int
	d      time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	timers []*time.Timer
	at     [2]time.Duration
	read   int
}

func (w *cpuWindow) onPhase(phase string, ends time.Time) {
	if phase != "warmup" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, t := range []time.Time{ends, ends.Add(w.d)} {
		w.wg.Add(1)
		w.timers = append(w.timers, time.AfterFunc(time.Until(t), func() {
			defer w.wg.Done()
			v, err := procstat.CPU(w.pid)
			w.mu.Lock()
			defer w.mu.Unlock()
			if err == nil {
				w.at[i] = v
				w.read++
			}
		}))
	}
}

// used waits for both reads (the run is over, so both are due) and
// returns the CPU time between them; false unless both were read.
func (w *cpuWindow) used() (time.Duration, bool) {
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at[1] - w.at[0], w.read == 2
}

// stop cancels the reads not yet made.
func (w *cpuWindow) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.timers {
		if t.Stop() {
			w.wg.Done()
		}
	}
}

// surfaceMismatch says how a run's connections depart from its case,
// or "" when they are what it asked: the mechanism, the certificate's key
// and, with churn, handshakes in the window. The load generator itself
// fails a run whose TLS version or suite is not the one asked.
func surfaceMismatch(c surfaceCase, conns *loadgen.Connections) string {
	switch {
	case conns == nil:
		return "no connections recorded"
	case c.mech != "" && conns.SASLMechanism != planner.KafkaSASLMechanism(c.mech):
		return "authenticated with " + conns.SASLMechanism + ", want " + planner.KafkaSASLMechanism(c.mech)
	case c.key != "" && conns.TLSKey != c.key:
		return "the broker's certificate has key " + conns.TLSKey + ", want " + c.key
	case c.churn > 0 && conns.Handshakes == 0:
		return "no handshake in the window with connection_churn " + strconv.Itoa(c.churn)
	}
	return ""
}

// report writes comparison c's medians and its costs against the
// baseline.
func (s *surfaceRunner) report(b *testing.B, c surfaceComparison) {
	t, base := s.trials[c.c], s.trials[c.base]
	b.ReportMetric(median(t.rate), "msg/s")
	b.ReportMetric(median(t.p50), "publish_p50_ms")
	b.ReportMetric(median(t.p99), "publish_p99_ms")
	b.ReportMetric(median(t.cpu), "broker_cpu_us/msg")
	b.ReportMetric(penalty(median(base.rate), median(t.rate)), "tput_penalty_%")
	b.ReportMetric(100*(median(t.p99)/median(base.p99)-1), "p99_penalty_%")
	b.ReportMetric(median(t.cpu)-median(base.cpu), "broker_cpu_added_us/msg")
	if median(t.handshakes) > 0 {
		b.ReportMetric(median(t.handshakes), "handshakes/s")
		b.ReportMetric(median(t.reconnectP99), "reconnect_p99_ms")
	}
	if median(base.handshakes) > 0 {
		b.ReportMetric(median(base.reconnectP99), "base_reconnect_p99_ms")
	}
}

// benchDuration is XP_BENCH_DURATION, or def when it is unset.
func benchDuration(b *testing.B, def time.Duration) time.Duration {
	v := os.Getenv("XP_BENCH_DURATION")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("XP_BENCH_DURATION=%q: %v", v, err)
	}
	return d
}

// countACLs is the number of ACLs the cluster holds, read by xp's admin.
func countACLs(b *testing.B, ctx context.Context, admin map[string]string) int {
	b.Helper()
	opts, err := kafkaconf.ClientOpts(admin)
	if err != nil {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	rs, err := kadm.NewClient(cl).DescribeACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().AllowHosts())
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		n += len(r.Described)
	}
	return n
}
