package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
)

// The Java client (Config.Client planner.ClientJava) is the load generator
// of xp's Java client release (infra/release/loadgen, `make java-client`)
// on Apache Kafka's KafkaProducer and KafkaConsumer; the librdkafka client
// (planner.ClientLibrdkafka, rdkafkaclient.go) is its twin in C on
// librdkafka. Both are external: this side does what is not the client's
// to measure, exactly as the Go path does it: the topics (created and
// deleted through kadm), the payloads (the same seeded encoder, written to
// a file the external side sends from), the job, and the Result from what
// the external side counted, with the same health rules. The external side
// runs the schedule, the producers and consumer groups, the digest check,
// the sampler and the histograms, and reports them.
//
// A row's security surface reaches the Java side as Kafka's own client
// properties: tls_version and tls_cipher as ssl.enabled.protocols,
// ssl.protocol and ssl.cipher.suites (kafkaconf.TLSChoice.JavaProperties),
// sasl_mechanism as sasl.mechanism with its login (kafkaconf's Java
// translation, and the JVM system properties OAUTHBEARER and GSSAPI
// need), and connection_churn as a job key. The Java side reads what its
// TLS connections negotiated from its own SSL engines; this side checks
// it against the row as the Go path checks each connection, and builds
// the same Connections.

// external is a load generator in a process of its own, run on the same
// job, payload file and report.
type external struct {
	// name is the client in messages ("java client").
	name string
	// home is the unpacked release the config names.
	home func(ctx context.Context, cfg Config) (string, error)
	// writeConfig writes the client's connection properties (from the
	// run's librdkafka-named ones) at path.
	writeConfig func(cfg Config, path string, props map[string]string) error
	// command runs the load generator on the job.
	command func(cfg Config, home, job string) *exec.Cmd
	// jobKeys, when set, are job keys of this client only, from the
	// run's client properties.
	jobKeys func(props map[string]string) [][2]string
}

// javaExternal is the Java client.
var javaExternal = external{
	name: "java client",
	home: javaClientHome,
	writeConfig: func(cfg Config, path string, props map[string]string) error {
		if err := kafkaconf.WriteJavaClientConfig(path, props); err != nil {
			return err
		}
		return appendJavaTLS(path, props, kafkaconf.TLSChoice{Version: cfg.TLSVersion, Cipher: cfg.TLSCipher})
	},
	// The login's JVM system properties are set by the Java side, not
	// given as flags, so the runtime it records keeps the JVM flags of
	// the run only (a krb5.conf path or a random port is not tuning).
	jobKeys: func(props map[string]string) [][2]string {
		sys := kafkaconf.JavaSystemProperties(props)
		var keys [][2]string
		for _, k := range slices.Sorted(maps.Keys(sys)) {
			keys = append(keys, [2]string{"system." + k, sys[k]})
		}
		return keys
	},
	command: func(cfg Config, home, job string) *exec.Cmd {
		java := cfg.Java
		if java == "" {
			java = "java"
		}
		args := append(append([]string{}, cfg.JVMOpts...), "-cp", filepath.Join(home, "libs")+"/*", release.JavaClientClass, job)
		return exec.Command(java, args...)
	},
}

// externalAssignTimeout bounds how long an external side's consumer groups
// may take to hold their partitions, where the Go side allows 1.5 ×
// connectTimeout: a fresh JVM runs its first TLS handshakes and SCRAM
// exchanges (4096 PBKDF2 iterations) interpreted, which on a busy machine
// takes seconds per member.
const externalAssignTimeout = 30 * time.Second

// externalStopGrace is how long an external side has to report after its input
// closes (an interrupted run) before it is killed.
const externalStopGrace = 15 * time.Second

// externalReport is what an external side prints as its result line: counts on
// its run clock (Unix ns), histograms per second (base64 V2-compressed
// HDR), the series and per-topic counts as "a,b,c" strings.
type externalReport struct {
	T0            int64    `json:"t0"`
	WarmEnd       int64    `json:"warm_end"`
	MeasEnd       int64    `json:"meas_end"`
	Published     int64    `json:"published"`
	Consumed      int64    `json:"consumed"`
	WarmPublished int64    `json:"warmup_published"`
	WarmConsumed  int64    `json:"warmup_consumed"`
	Errors        int64    `json:"errors"`
	Unsent        int64    `json:"unsent"`
	Duplicates    int64    `json:"duplicates"`
	BacklogMax    int64    `json:"backlog_max"`
	Backlog       int64    `json:"backlog"`
	Drained       bool     `json:"drained"`
	DrainAt       int64    `json:"drain_at"`
	Unacked       int64    `json:"unacked"`
	CPUS          float64  `json:"cpu_s"`
	ErrorSamples  []string `json:"error_samples"`
	Series        []string `json:"series"`
	Topics        []string `json:"topics"`
	Publish       []string `json:"publish"`
	E2E           []string `json:"e2e"`
	SendDelay     []string `json:"send_delay"`
	ClientName    string   `json:"client_name"`
	ClientVersion string   `json:"client_version"`
	ClientRuntime string   `json:"client_runtime"`
	// TLSSessions are the distinct "PROTOCOL,SUITE,KEY" the TLS
	// connections negotiated (JSSE's names, e.g. "TLSv1.3").
	TLSSessions []string `json:"tls_sessions"`
	// Reconnects, Handshakes and Reconnect are connection churn's counts
	// and reconnect-time histogram (base64 V2-compressed HDR, us).
	Reconnects int64  `json:"reconnects"`
	Handshakes int64  `json:"handshakes"`
	Reconnect  string `json:"reconnect"`
	// PacerWaitNs, PacerRuns and Pacers are the pacer threads' run-queue
	// wait and turns on a CPU over the window, from their own
	// /proc/thread-self/schedstat (Scheduling); Pacers 0 where unreadable.
	PacerWaitNs int64 `json:"pacer_wait_ns"`
	PacerRuns   int64 `json:"pacer_runs"`
	Pacers      int   `json:"pacers"`
}

// executeExternal is execute with an external client: the topics here,
// the load in its process, the Result here.
func (r *run) executeExternal(ctx context.Context, x external) (*Result, error) {
	cfg := r.cfg
	home, err := x.home(ctx, cfg)
	if err != nil {
		return nil, err
	}
	topics, existed, err := r.openTopics(ctx)
	if err != nil {
		return nil, err
	}
	defer topics.close()
	r.indexTopics()
	for g := range cfg.ConsumerGroups {
		r.groups = append(r.groups, GroupName(r.name, g))
	}
	work, err := os.MkdirTemp("", "xp-java-loadgen-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	job, err := r.writeJob(work, existed, x)
	if err != nil {
		return nil, err
	}
	rep, rss, err := r.runExternal(ctx, x, home, job)
	if err != nil {
		return nil, err
	}
	warnings := topics.remove()
	res, err := r.externalResult(x, rep, rss)
	if err != nil {
		return nil, err
	}
	res.Warnings = warnings
	res.Healthy, res.Reasons = judgeHealth(cfg, measurement{
		Published: res.Published, Consumed: res.Consumed,
		PublishRate: res.PublishRate, ConsumeRate: res.ConsumeRate,
		Unsent: rep.Unsent, Drained: rep.Drained, Backlog: rep.Backlog, Unacked: rep.Unacked,
		Errors: res.Errors, ErrorSamples: res.ErrorSamples,
	})
	if err := ctx.Err(); err != nil {
		return res, err
	}
	r.phase("done", time.Now())
	return res, nil
}

// javaClientHome is the unpacked Java client release cfg.JavaClient names:
// a directory holding libs/, or a release archive, checked and unpacked
// once into the cache.
func javaClientHome(ctx context.Context, cfg Config) (string, error) {
	p := cfg.JavaClient
	if fi, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%w: --java-client %s: %v (make java-client writes out/dist/xp-java-client-VERSION.tgz)", ErrConfig, p, err)
	} else if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(p, "libs", "xp-java-loadgen.jar")); err != nil {
			return "", fmt.Errorf("%w: --java-client %s: no libs/xp-java-loadgen.jar: not an unpacked Java client release (make java-client)", ErrConfig, p)
		}
		return p, nil
	}
	sum, err := release.SHA512File(p)
	if err != nil {
		return "", fmt.Errorf("%w: --java-client: %v", ErrConfig, err)
	}
	c, err := release.Cache(ctx, cfg.CacheDir, release.Fetch{Kind: "java-client", Distribution: p, SHA512: sum, SHA512Key: "--java-client",
		Inspect: func(archive string) (string, string, error) {
			rel, err := release.InspectJavaClient(archive)
			return rel.Top, "libs", err
		}})
	if err != nil {
		return "", fmt.Errorf("%w: --java-client: %v", ErrConfig, err)
	}
	return c.Dir, nil
}

// externalPayloadPool is how many values an external side sends from: as many as
// the Go client's byte pool holds (8 MiB of values, 16 to 4096 of them).
func externalPayloadPool(size int) int { return max(16, min((8<<20)/size, 4096)) }

// writeJob writes the payloads, x's client properties and the job into
// dir and returns the job's path.
func (r *run) writeJob(dir string, existed bool, x external) (string, error) {
	cfg := r.cfg
	var pay bytes.Buffer
	var n [4]byte
	put := func(v []byte) {
		binary.BigEndian.PutUint32(n[:], uint32(len(v)))
		pay.Write(n[:])
		pay.Write(v)
	}
	if r.pay.encoding == EncodingBytes {
		put32 := func(k int) { binary.BigEndian.PutUint32(n[:], uint32(k)); pay.Write(n[:]) }
		put32(len(r.pay.pool))
		for _, v := range r.pay.pool {
			put(v)
		}
	} else {
		k := externalPayloadPool(cfg.MessageSize)
		binary.BigEndian.PutUint32(n[:], uint32(k))
		pay.Write(n[:])
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6a6176612d706f6f))
		for range k {
			v, _ := r.pay.next(rng, nil)
			put(v)
		}
	}
	payPath := filepath.Join(dir, "payloads.bin")
	if err := os.WriteFile(payPath, pay.Bytes(), 0o600); err != nil {
		return "", err
	}
	props := map[string]string{}
	for k, v := range cfg.ClientConfig {
		if k != kafkaconf.BootstrapServers {
			props[k] = v
		}
	}
	if r.saslMech != "" {
		props[kafkaconf.SASLMechanism] = r.saslMech
		delete(props, kafkaconf.SASLMechanisms)
	}
	clientPath := filepath.Join(dir, "client.properties")
	if err := x.writeConfig(cfg, clientPath, props); err != nil {
		return "", fmt.Errorf("%w: --client-config: %v", ErrConfig, err)
	}
	inFlight := 0
	if cfg.Rate == 0 {
		inFlight = cfg.InFlight()
	}
	parts := make([]string, len(r.parts))
	for i, p := range r.parts {
		parts[i] = strconv.Itoa(p)
	}
	firsts := make([]string, cfg.Producers)
	for k := range firsts {
		firsts[k] = strconv.Itoa(r.firstTopic(k))
	}
	reset := "earliest"
	if existed {
		reset = "latest"
	}
	job := [][2]string{
		{"bootstrap", strings.Join(r.bootstrap, ",")},
		{"client.config", clientPath},
		{"payload.file", payPath},
		{"topics", strings.Join(r.topics, ",")},
		{"partitions", strings.Join(parts, ",")},
		{"groups.names", strings.Join(r.groups, ",")},
		{"offset.reset", reset},
		{"producers", strconv.Itoa(cfg.Producers)},
		{"first.topics", strings.Join(firsts, ",")},
		{"groups", strconv.Itoa(cfg.ConsumerGroups)},
		{"consumers.per.group", strconv.Itoa(cfg.ConsumersPerGroup)},
		{"rate", strconv.FormatInt(cfg.Rate, 10)},
		{"in.flight", strconv.Itoa(inFlight)},
		{"buffer.records", strconv.Itoa(max(10000, 2*inFlight, int(cfg.Rate)/cfg.Producers))},
		{"message.size", strconv.Itoa(cfg.MessageSize)},
		{"acks", cfg.Acks},
		{"linger.ms", strconv.Itoa(cfg.LingerMs)},
		{"batch.bytes", strconv.Itoa(cfg.BatchBytes)},
		{"compression", cfg.Compression},
		{"warmup.ns", strconv.FormatInt(int64(cfg.Warmup), 10)},
		{"duration.ns", strconv.FormatInt(int64(cfg.Duration), 10)},
		{"drain.timeout.ns", strconv.FormatInt(int64(cfg.DrainTimeout), 10)},
		{"seed", strconv.FormatInt(cfg.Seed, 10)},
		{"assign.timeout.ns", strconv.FormatInt(int64(externalAssignTimeout), 10)},
		{"connection.churn", strconv.Itoa(cfg.ConnectionChurn)},
	}
	if x.jobKeys != nil {
		job = append(job, x.jobKeys(props)...)
	}
	var b strings.Builder
	b.WriteString("# xp loadgen --client " + cfg.Client + ": one run\n")
	esc := strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	for _, kv := range job {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], esc.Replace(kv[1]))
	}
	path := filepath.Join(dir, "job.properties")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// appendJavaTLS adds to the Java client properties at path, on a TLS
// connection, the row's TLS narrowing and the Java side's engine factory
// (Kafka's, noting each engine so that what it negotiated is read back).
func appendJavaTLS(path string, props map[string]string, choice kafkaconf.TLSChoice) error {
	if p := kafkaconf.Protocol(props); p != "ssl" && p != "sasl_ssl" {
		return nil
	}
	add := choice.JavaProperties()
	add["ssl.engine.factory.class"] = release.JavaClientClass + "$Engines"
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		fmt.Fprintf(f, "%s=%s\n", k, add[k])
	}
	return f.Close()
}

// runExternal runs x on job and reads its report; rss is its peak
// resident set in MiB. Its phases are relayed; an interrupt (ctx) closes
// its input, which ends the run early, and the process is killed if it
// does not report within externalStopGrace; every run is bounded by its
// timeline plus a minute.
func (r *run) runExternal(ctx context.Context, x external, home, job string) (_ *externalReport, rss float64, _ error) {
	cfg := r.cfg
	cmd := x.command(cfg, home, job)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, r.fail("%s: %v", x.name, err)
	}
	limit := externalAssignTimeout + cfg.Warmup + cfg.Duration + cfg.DrainTimeout + time.Minute
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(limit)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-ctx.Done():
			stdin.Close()
		case <-t.C:
			cmd.Process.Kill()
			return
		}
		select {
		case <-done:
		case <-time.After(externalStopGrace):
			cmd.Process.Kill()
		}
	}()
	var rep *externalReport
	var failure string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		line := sc.Text()
		switch word, rest, _ := strings.Cut(line, " "); word {
		case "phase":
			name, ns, _ := strings.Cut(rest, " ")
			if t, err := strconv.ParseInt(ns, 10, 64); err == nil {
				r.phase(name, time.Unix(0, t))
			}
		case "result":
			rep = new(externalReport)
			if err := json.Unmarshal([]byte(rest), rep); err != nil {
				failure = fmt.Sprintf("unreadable report: %v", err)
				rep = nil
			}
		case "pacer":
			// A pacer thread's id and timer slack: the thread gets the Go
			// pacer's scheduling (the process's own threads only).
			f := strings.Fields(rest)
			if len(f) != 2 {
				break
			}
			if tid, err := strconv.Atoi(f[0]); err == nil && tid > 0 && ownThread(cmd.Process.Pid, tid) {
				applied := hintThread(tid)
				if slack, err := strconv.Atoi(f[1]); err == nil {
					applied = withSlack(applied, slack)
				} else {
					applied += "; timer slack unknown"
				}
				r.pacerPriority.CompareAndSwap(nil, &applied)
			}
		case "error":
			failure = rest
		}
	}
	waitErr := cmd.Wait()
	close(done)
	wg.Wait()
	stdin.Close()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024
	}
	switch {
	case failure != "":
		return nil, 0, r.fail("%s: %s", x.name, failure)
	case rep == nil && ctx.Err() != nil:
		return nil, 0, ctx.Err()
	case rep == nil:
		return nil, 0, r.fail("%s: %v, no report\n%s", x.name, waitErr, stderr.String())
	}
	return rep, rss, nil
}

// externalResult builds the Result from x's report, as result does from
// the Go side's counters: the whole-run histograms are the merge of the
// per-second ones (so both sides' encodings merge), the per-second ones
// go to Intervals as the external side encoded them.
func (r *run) externalResult(x external, rep *externalReport, rss float64) (*Result, error) {
	cfg := r.cfg
	d := cfg.Duration.Seconds()
	warmEnd, measEnd := time.Unix(0, rep.WarmEnd), time.Unix(0, rep.MeasEnd)
	res := &Result{TargetRate: Rate(cfg.Rate), Start: warmEnd, End: measEnd}
	res.Published, res.Consumed = rep.Published, rep.Consumed
	res.PublishRate, res.ConsumeRate = float64(res.Published)/d, float64(res.Consumed)/d
	res.Errors, res.Duplicates, res.BacklogMax = rep.Errors, rep.Duplicates, rep.BacklogMax
	if rep.Drained {
		res.DrainS = max(0, time.Duration(rep.DrainAt-rep.MeasEnd).Seconds())
	} else {
		res.DrainS = cfg.DrainTimeout.Seconds()
	}
	res.ClientCPUS, res.ClientRSSMaxMiB = rep.CPUS, rss
	res.Warmup = WarmupCounts{Seconds: cfg.Warmup.Seconds(), Published: rep.WarmPublished, Consumed: rep.WarmConsumed}
	res.ErrorSamples = rep.ErrorSamples
	res.Config = echo(cfg, r.name, r.bootstrap)
	if p := r.pacerPriority.Load(); p != nil {
		res.Config.PacerPriority = *p
	}
	r.sched.add(rep.Pacers, time.Duration(rep.PacerWaitNs), rep.PacerRuns)
	res.Scheduling = r.sched.result()
	res.Client = ClientInfo{Name: rep.ClientName, Version: rep.ClientVersion, Runtime: rep.ClientRuntime}
	res.Series = make([]Second, len(rep.Series))
	for i, s := range rep.Series {
		v, err := ints3(s)
		if err != nil {
			return nil, fmt.Errorf("loadgen: %s series %q: %w", x.name, s, err)
		}
		res.Series[i] = Second{Second: i, Published: v[0], Consumed: v[1], Backlog: v[2]}
	}
	if len(rep.Topics) != len(r.topics) {
		return nil, fmt.Errorf("loadgen: %s reported %d topics, want %d", x.name, len(rep.Topics), len(r.topics))
	}
	res.Topics = make([]TopicCount, len(r.topics))
	for i, t := range r.topics {
		pub, cons, _ := strings.Cut(rep.Topics[i], ",")
		p, err1 := strconv.ParseInt(pub, 10, 64)
		c, err2 := strconv.ParseInt(cons, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("loadgen: %s topic counts %q: %w", x.name, rep.Topics[i], err)
		}
		res.Topics[i] = TopicCount{Topic: t, Partitions: r.parts[i], Published: p, Consumed: c}
	}
	for _, k := range [][]string{rep.Publish, rep.E2E, rep.SendDelay} {
		if len(k) != r.nsecOf() {
			return nil, fmt.Errorf("loadgen: %s reported %d seconds of histograms, want %d", x.name, len(k), r.nsecOf())
		}
	}
	totals := [3]*hdrhistogram.Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	for s := range r.nsecOf() {
		iv := Interval{Second: s, Publish: []byte(rep.Publish[s]), E2E: []byte(rep.E2E[s]), SendDelay: []byte(rep.SendDelay[s])}
		for k, enc := range [][]byte{iv.Publish, iv.E2E, iv.SendDelay} {
			h, err := hdrhistogram.Decode(enc)
			if err != nil {
				return nil, fmt.Errorf("loadgen: %s histogram of second %d: %w", x.name, s, err)
			}
			totals[k].Merge(h)
		}
		res.Intervals = append(res.Intervals, iv)
	}
	res.PublishLatencyMs, res.E2ELatencyMs, res.SendDelayMs = Summarize(totals[0]), Summarize(totals[1]), Summarize(totals[2])
	for k, dst := range []*string{&res.Histograms.Publish, &res.Histograms.E2E, &res.Histograms.SendDelay} {
		b, err := EncodeHistogram(totals[k])
		if err != nil {
			return nil, fmt.Errorf("loadgen: encode histogram: %w", err)
		}
		*dst = string(b)
	}
	conns, departures, err := r.externalConnections(rep)
	if err != nil {
		return nil, err
	}
	res.Connections = conns
	for _, why := range departures {
		res.Errors++
		if len(res.ErrorSamples) < maxErrSamples {
			res.ErrorSamples = append(res.ErrorSamples, "tls: "+why)
		}
	}
	return res, nil
}

// externalConnections is the Connections of an external client's report,
// in the Go path's form: the TLS negotiated under Go's names (the first of
// the sessions reported; the Java side reports them, librdkafka none), the
// row's SASL mechanism, and churn's counts and reconnect histogram;
// departures are the reported sessions that are not what the row asked
// for, as TLSChoice.Check words them.
func (r *run) externalConnections(rep *externalReport) (*Connections, []string, error) {
	cfg := r.cfg
	c := &Connections{SASLMechanism: r.saslMech, Churn: cfg.ConnectionChurn, Reconnects: rep.Reconnects, Handshakes: rep.Handshakes}
	c.HandshakesPerS = float64(c.Handshakes) / cfg.Duration.Seconds()
	var departures []string
	for i, s := range rep.TLSSessions {
		proto, rest, _ := strings.Cut(s, ",")
		suite, key, _ := strings.Cut(rest, ",")
		cs := tls.ConnectionState{Version: jsseVersions[proto], CipherSuite: cipherSuiteID(suite)}
		if why := r.conns.choice.Check(cs); why != "" {
			departures = append(departures, why)
		}
		if i == 0 {
			c.TLSVersion, c.TLSCipher, c.TLSKey = proto, suite, key
			if cs.Version != 0 {
				c.TLSVersion = tls.VersionName(cs.Version)
			}
		}
	}
	h := NewHistogram()
	if rep.Reconnect != "" {
		d, err := hdrhistogram.Decode([]byte(rep.Reconnect))
		if err != nil {
			return nil, nil, fmt.Errorf("loadgen: %s client reconnect histogram: %w", r.cfg.Client, err)
		}
		h.Merge(d)
	}
	c.ReconnectMs = Summarize(h)
	b, err := EncodeHistogram(h)
	if err != nil {
		return nil, nil, fmt.Errorf("loadgen: encode histogram: %w", err)
	}
	c.Reconnect = string(b)
	return c, departures, nil
}

// jsseVersions are JSSE's protocol names as crypto/tls versions.
var jsseVersions = map[string]uint16{"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// cipherSuiteID is the crypto/tls ID of an IANA suite name (JSSE's names
// are IANA's), 0 for a suite Go does not know.
func cipherSuiteID(name string) uint16 {
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if s.Name == name {
			return s.ID
		}
	}
	return 0
}

// nsecOf is the seconds of measurement, as both sides count them.
func (r *run) nsecOf() int { return int((r.cfg.Duration + time.Second - 1) / time.Second) }

func ints3(s string) ([3]int64, error) {
	var v [3]int64
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return v, errors.New("want three numbers")
	}
	for i := range f {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return v, err
		}
		v[i] = n
	}
	return v, nil
}

// tailBuffer keeps the last 8 KiB written to it (a child's stderr, for
// the message of its failure).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = t.b[len(t.b)-8<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tailBuffer)(nil)
