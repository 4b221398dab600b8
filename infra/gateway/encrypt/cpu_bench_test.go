package encrypt

import (
	"bufio"
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/internal/aesgcm"
	"github.com/xp-bench/xp/internal/ff1"
	"github.com/xp-bench/xp/planner"
)

// helperEnv makes the test binary run a gateway instead of tests, so its
// CPU time can be measured apart from the broker and the clients.
const helperEnv = "XP_ENCRYPT_GATEWAY_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(runGatewayHelper(spec))
	}
	os.Exit(m.Run())
}

// helperSpec is what the helper process is told, as JSON in helperEnv.
type helperSpec struct {
	Upstream []string
	CA       string
	Cert     string
	Key      string
	Mode     string // proxy, encrypt, json, avro, protobuf; json_fpe, avro_fpe, protobuf_fpe: cipher fpe
	Vault    string
	Schemas  string // directory of the load generator's schemas
	// Crypto is the gateway's crypto: std (default) or fast.
	Crypto string
}

// runGatewayHelper serves a TLS-both-legs gateway until stdin closes; it
// prints "BOOTSTRAP host:port" when ready.
func runGatewayHelper(raw string) int {
	var s helperSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	zero := 0
	cfg := &gateway.Config{
		Listen:   gateway.Listen{Host: "127.0.0.1", BootstrapPort: &zero, NodePortBase: &zero},
		Client:   gateway.Client{Transport: planner.SecurityTLS, Cert: s.Cert, Key: s.Key},
		Upstream: gateway.Upstream{Bootstrap: s.Upstream, Transport: planner.SecurityTLS, CA: s.CA},
		Metrics:  gateway.Metrics{Listen: "off"},
		Crypto:   s.Crypto,
	}
	var rules []TopicRule
	mode, fpe := strings.CutSuffix(s.Mode, "_fpe")
	switch mode {
	case "encrypt":
		rules = []TopicRule{{Pattern: "*", Mode: planner.SecurityEncrypt}}
	case EncodingJSON:
		rules = []TopicRule{{Pattern: "*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingJSON}}
	case EncodingAvro:
		rules = []TopicRule{{Pattern: "*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingAvro, AvroSchema: filepath.Join(s.Schemas, "record.avsc")}}
	case EncodingProtobuf:
		rules = []TopicRule{{Pattern: "*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingProtobuf, ProtobufDescriptorSet: filepath.Join(s.Schemas, "record.pb")}}
	}
	if fpe {
		rules[0].Cipher = CipherFPE
	}
	if rules != nil {
		f, err := New(Config{Vault: s.Vault, CreateVault: true, Topics: rules}, ".")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		cfg.Filters = []gateway.RecordFilter{f}
	}
	g, err := gateway.Start(context.Background(), cfg, gateway.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// XP_GATEWAY_CPUPROFILE=FILE profiles the helper (the gateway alone).
	if p := os.Getenv("XP_GATEWAY_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	fmt.Printf("BOOTSTRAP %s\n", g.Bootstrap())
	_, _ = io.Copy(io.Discard, os.Stdin)
	g.Close()
	// XP_GATEWAY_MEMPROFILE=FILE writes the helper's allocation profile.
	if p := os.Getenv("XP_GATEWAY_MEMPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	return 0
}

// cpuModes are BenchmarkGatewayCPU's gateway modes: the sub-benchmark name
// and the helper's mode.
var cpuModes = []struct{ name, mode, layer string }{
	{"proxy", "proxy", ""},
	{"encrypt", "encrypt", ""},
	{"field_encrypt/json", EncodingJSON, ""},
	{"field_encrypt/avro", EncodingAvro, ""},
	{"field_encrypt/protobuf", EncodingProtobuf, ""},
	// The ssn format-preserving (cipher fpe: FF1) instead of in an
	// AES-GCM envelope.
	{"field_encrypt/json_fpe", EncodingJSON + "_fpe", ""},
	{"field_encrypt/avro_fpe", EncodingAvro + "_fpe", ""},
	{"field_encrypt/protobuf_fpe", EncodingProtobuf + "_fpe", ""},
	// The same gateways with crypto fast (tlsrec and VAES AES-GCM).
	{"proxy_fast", "proxy", planner.GatewayCryptoFast},
	{"encrypt_fast", "encrypt", planner.GatewayCryptoFast},
	{"field_encrypt/json_fast", EncodingJSON, planner.GatewayCryptoFast},
	{"field_encrypt/avro_fast", EncodingAvro, planner.GatewayCryptoFast},
	{"field_encrypt/protobuf_fast", EncodingProtobuf, planner.GatewayCryptoFast},
}

// Bounds of one BenchmarkGatewayCPU load: the produce phase stops at
// cpuMaxRecords or cpuMaxTime, whichever comes first (about 170 MB held by
// the broker at most), and the fetch phase reads back what was produced
// within cpuFetchTimeout.
const (
	cpuMaxRecords   = 150_000
	cpuMaxTime      = 2 * time.Second
	cpuFetchTimeout = 30 * time.Second
	cpuPartitions   = 6
	cpuLoads        = 5
)

// BenchmarkGatewayCPU is the gateway's own CPU time per 1 KiB record (an
// 11-byte ssn field in the field_encrypt encodings) at saturation with TLS
// on both legs, read from the /proc schedstat of a gateway running alone
// in a helper process (the broker and clients run here), as the gateway
// benchmark (infra/gateway BenchmarkGatewayCPU) measures the passthrough
// proxy. Each load produces up to 150k records (or for 2 s) with 1 MiB
// batches, 5 ms linger and 8 requests in flight over 6 partitions,
// measuring the produce side (encrypt), then one consumer group fetches
// them all back with franz-go's default fetch sizes (1 MiB a partition),
// measuring the fetch side (decrypt and batch rebuild). The producer and
// the consumer keep their connections from load to load (the consumer
// adds each load's topic and drops it after), so TLS handshakes and
// connection set-up are not in the figures, as in the gateway benchmark
// (gateway.BenchmarkGatewayCPU). Every mode runs five loads, in rounds: each round runs one load of
// every mode, in a shuffled order. The host of a shared VM can slow any
// load by a third; a slow minute then lands on one load of several modes
// instead of on all of one mode's. Each mode reports the median of
// each side and their sum (gw_us/record), with min and max, and the
// kernel's part of the sum (kernel_us/record: system time, which on
// loopback is mostly the network stack copying the record's bytes into
// and out of the sockets, twice each way). The floor rows
// are what no gateway can avoid per record: AES-256-GCM seal plus open of
// the encrypted bytes (the 1 KiB value, or the 11-byte field) plus the TLS
// legs, AES-128-GCM (Go's TLS 1.3 choice with AES hardware) over the
// record on each of the four legs it crosses (produce in and out, fetch
// in and out), with xp's AES-GCM (floor/, VAES where the CPU has it) and
// with Go's crypto/aes (floor_crypto_aes/, what crypto/tls and the
// default gateway use). The plain rows run the default gateway (crypto
// std: crypto/tls and crypto/cipher); the *_fast rows the same gateway
// with crypto fast (xp's TLS 1.3 record layer and VAES AES-GCM, where this
// binary and CPU allow), side by side in the same rounds; the *_fpe rows
// encrypt the ssn format-preserving (field_cipher fpe: FF1 over AES-256,
// no envelope, the record keeps its size) instead of sealing it in an
// AES-GCM envelope, with the floor row floor/field_encrypt_fpe: FF1
// encryption and decryption of the ssn's nine digits plus the TLS legs.
//
// Targets (cmd/xpbench, judged on the fast rows): encrypt and field_encrypt avro and protobuf under 2.5 µs per
// record, json under 3.5 µs; over_proxy_us is what a mode adds to the
// proxy of the same crypto measured in the same run.
//
// XP_GATEWAY_CPUPROFILE=PREFIX writes each helper's CPU profile to
// PREFIX.MODE (e.g. PREFIX.encrypt, PREFIX.json), XP_GATEWAY_MEMPROFILE
// its allocation profile.
func BenchmarkGatewayCPU(b *testing.B) {
	dir := b.TempDir()
	ca, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		b.Fatal(err)
	}
	brokerCert, brokerKey, err := ca.Server("broker", "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	gwCert, gwKey, err := ca.Gateway("gateway", "127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	serverTLS, err := ca.ServerTLS(brokerCert, brokerKey, false)
	if err != nil {
		b.Fatal(err)
	}
	clientTLS, err := ca.ClientTLS("", "")
	if err != nil {
		b.Fatal(err)
	}
	schemas, err := filepath.Abs("../../../runner/loadgen/schema")
	if err != nil {
		b.Fatal(err)
	}
	// Every mode gets its own broker, gateway helper and clients, all set
	// up (and warmed up) first; then the loads run in rounds, one load of
	// every mode a round, in a fresh shuffled order each round. A slow
	// phase of the shared host (which charges what it takes to the
	// running thread) then lands on one load of several modes instead of
	// on every load of one mode, so each mode's median and the modes'
	// differences stay comparable.
	// Only the modes -test.bench selects are set up.
	rigs := make([]*cpuRig, len(cpuModes))
	var chosen []*cpuRig
	for i, m := range cpuModes {
		if !benchSelected(b.Name() + "/" + m.name) {
			continue
		}
		rigs[i] = newCPURig(b, m.mode, m.layer, helperSpec{CA: ca.CAPath(), Cert: gwCert, Key: gwKey,
			Vault: filepath.Join(dir, "kek.keys"), Schemas: schemas}, serverTLS, clientTLS)
		defer rigs[i].close()
		chosen = append(chosen, rigs[i])
	}
	order := rand.New(rand.NewPCG(5, 6))
	for round := range cpuLoads {
		for _, i := range order.Perm(len(chosen)) {
			chosen[i].measure(b, round+1)
		}
	}
	proxyUs := map[string]float64{} // crypto → the proxy's gw_us/record
	for i, m := range cpuModes {
		r := rigs[i]
		if r == nil {
			continue
		}
		b.Run(m.name, func(b *testing.B) {
			for _, s := range [][]float64{r.produceUs, r.fetchUs, r.sumUs, r.kernelUs, r.produceRate, r.fetchRate} {
				sort.Float64s(s)
			}
			mid := cpuLoads / 2
			sum := r.produceUs[mid] + r.fetchUs[mid]
			b.ReportMetric(sum, "gw_us/record")
			if m.mode == "proxy" {
				proxyUs[m.layer] = sum
			} else if p := proxyUs[m.layer]; p > 0 {
				// What encryption adds to the passthrough proxy of the
				// same crypto.
				b.ReportMetric(sum-p, "over_proxy_us/record")
			}
			// The kernel's part (system calls and the loopback network
			// stack moving the record's bytes in and out), which no
			// user-space change removes.
			b.ReportMetric(r.kernelUs[mid], "kernel_us/record")
			b.ReportMetric(r.produceUs[mid], "produce_us/record")
			b.ReportMetric(r.fetchUs[mid], "fetch_us/record")
			b.ReportMetric(r.sumUs[0], "gw_us/record_min")
			b.ReportMetric(r.sumUs[len(r.sumUs)-1], "gw_us/record_max")
			b.ReportMetric(r.produceRate[mid], "produce_records/s")
			b.ReportMetric(r.fetchRate[mid], "fetch_records/s")
		})
	}
	// The floor: per record, the encryption's own AES-256-GCM seal+open
	// (of the 1 KiB value, or of the 11-byte field), plus AES-128-GCM over
	// the 1 KiB record on each of its four TLS legs (a seal and an open on
	// the produce legs, another on the fetch legs); with the AES-GCM the
	// gateway uses (VAES where the CPU has it), and with Go's crypto/aes
	// (what crypto/tls uses).
	for _, impl := range []struct {
		prefix string
		aead   func([]byte) (cipher.AEAD, error)
	}{{"floor", aesgcm.New}, {"floor_crypto_aes", aesgcm.NewStd}} {
		for _, f := range []struct {
			name string
			n    int // bytes the gateway encrypts (0: none)
		}{{"proxy", 0}, {"encrypt", 1024}, {"field_encrypt", 11}, {"field_encrypt_fpe", -9}} {
			b.Run(impl.prefix+"/"+f.name, func(b *testing.B) {
				tls := newSealOpen(b, impl.aead, 16, 1024)
				enc := newSealOpen(b, impl.aead, 32, max(f.n, 0))
				ff, err := ff1.New(make([]byte, 32))
				if err != nil {
					b.Fatal(err)
				}
				digits, tweak := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte("cpu-1\x00ssn")
				for b.Loop() {
					tls.run(b)
					tls.run(b)
					switch {
					case f.n > 0:
						enc.run(b)
					case f.n < 0: // FF1 of the ssn's digits, both ways
						if ff.Encrypt(digits, 10, tweak) != nil || ff.Decrypt(digits, 10, tweak) != nil {
							b.Fatal("ff1")
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "gw_us/record")
			})
		}
	}
}

// benchSelected reports whether -test.bench selects the benchmark of this
// full name (levels joined by "/"), matching each level of the pattern as
// the testing package does; a name with fewer levels than the pattern is
// selected when its levels match.
func benchSelected(name string) bool {
	f := flag.Lookup("test.bench")
	if f == nil {
		return true
	}
	pattern := f.Value.String()
	if pattern == "" || pattern == "." {
		return true
	}
	levels := strings.Split(name, "/")
	for i, p := range splitPattern(pattern) {
		if i >= len(levels) {
			break
		}
		re, err := regexp.Compile(p)
		if err != nil || !re.MatchString(levels[i]) {
			return false
		}
	}
	return true
}

// splitPattern splits a -test.bench pattern into its levels at the
// slashes outside brackets and parentheses, as the testing package does.
func splitPattern(pattern string) []string {
	var levels []string
	depth, start := 0, 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '/':
			if depth == 0 {
				levels = append(levels, pattern[start:i])
				start = i + 1
			}
		}
	}
	return append(levels, pattern[start:])
}

// cpuRig is one BenchmarkGatewayCPU mode: a broker, the gateway helper in
// front of it, a producer and a consumer (which keep their connections
// from load to load, the consumer adding each load's topic and dropping
// it after), and the measurements of its loads so far.
type cpuRig struct {
	kf         *kfake.Cluster
	h          *helper
	prod, cons *kgo.Client
	topics     []string
	values     [][]byte
	ctx        context.Context
	cancel     context.CancelFunc

	produceUs, fetchUs, sumUs, kernelUs, produceRate, fetchRate []float64
}

func newCPURig(b *testing.B, mode, layer string, spec helperSpec, serverTLS, clientTLS *tls.Config) *cpuRig {
	r := &cpuRig{}
	for i := range cpuLoads + 1 {
		r.topics = append(r.topics, fmt.Sprintf("cpu-%d", i))
	}
	// Batches of 1 MiB grow by about 10% when encrypted: the broker
	// takes requests up to 8 MiB.
	var err error
	r.kf, err = kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(cpuPartitions, r.topics...), kfake.TLS(serverTLS),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": strconv.Itoa(8 << 20)}))
	if err != nil {
		b.Fatal(err)
	}
	spec.Upstream, spec.Mode, spec.Crypto = r.kf.ListenAddrs(), mode, layer
	r.h = startHelper(b, spec)
	opts := []kgo.Opt{kgo.SeedBrokers(r.h.bootstrap), kgo.DialTLSConfig(clientTLS)}
	if r.prod, err = kgo.NewClient(append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(20000), kgo.MaxProduceRequestsInflightPerBroker(8),
		kgo.ProducerBatchCompression(kgo.NoCompression()))...); err != nil {
		b.Fatal(err)
	}
	// One consumer in one group reads every load's topic in turn over the
	// same connections: as with the producer, connection set-up (TLS
	// handshakes, buffers) is not in the per-record figures, which are
	// the gateway at saturation.
	if r.cons, err = kgo.NewClient(append(opts, kgo.ConsumeTopics(r.topics[0]), kgo.ConsumerGroup("g-cpu"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...); err != nil {
		b.Fatal(err)
	}
	enc := strings.TrimSuffix(mode, "_fpe")
	if mode == "proxy" || mode == "encrypt" {
		enc = "bytes"
	}
	rng := rand.New(rand.NewPCG(3, 4))
	r.values = make([][]byte, 4096)
	for i := range r.values {
		r.values[i] = newPayload(rng, 1024).encode(enc, rng)
	}
	r.ctx, r.cancel = context.WithTimeout(context.Background(), 15*time.Minute)
	// Warm up: connections, data keys, buffers.
	r.fetchLoad(b, r.topics[0], r.produceLoad(b, r.topics[0]))
	if err := r.kf.DeleteTopic(r.topics[0]); err != nil {
		b.Fatal(err)
	}
	return r
}

func (r *cpuRig) close() {
	r.cancel()
	r.cons.Close()
	r.prod.Close()
	r.h.close()
	r.kf.Close()
}

// produceLoad produces up to cpuMaxRecords records (or for cpuMaxTime) to
// topic and returns how many were acknowledged.
func (r *cpuRig) produceLoad(b *testing.B, topic string) int64 {
	var acked, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	start := time.Now()
	for i := 0; i < cpuMaxRecords && time.Since(start) < cpuMaxTime; i++ {
		r.prod.Produce(r.ctx, &kgo.Record{Topic: topic, Value: r.values[i%len(r.values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, &err)
			} else {
				acked.Add(1)
			}
		})
	}
	if err := r.prod.Flush(r.ctx); err != nil {
		b.Fatal(err)
	}
	if failed.Load() > 0 {
		b.Fatalf("%d records failed: %v\n%s", failed.Load(), *firstErr.Load(), r.h.stderr.String())
	}
	return acked.Load()
}

// fetchLoad reads want records of topic back through the group.
func (r *cpuRig) fetchLoad(b *testing.B, topic string, want int64) {
	if topic != r.topics[0] {
		r.cons.AddConsumeTopics(topic)
	}
	fctx, cancel := context.WithTimeout(r.ctx, cpuFetchTimeout)
	defer cancel()
	for got := int64(0); got < want; {
		fs := r.cons.PollFetches(fctx)
		if err := fs.Err(); err != nil {
			b.Fatalf("fetch after %d of %d records: %v\n%s", got, want, err, r.h.stderr.String())
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Topic != topic {
				b.Fatalf("fetched a record of %s while reading %s", rec.Topic, topic)
			}
		})
		got += int64(fs.NumRecords())
	}
	r.cons.PurgeTopicsFromConsuming(topic)
}

// measure runs load i (1 to cpuLoads) and records the helper's CPU time
// per record on each side, their sum, the kernel's part and the rates.
func (r *cpuRig) measure(b *testing.B, i int) {
	topic := r.topics[i]
	k0 := r.h.kernel(b)
	t0 := r.h.cpu(b)
	start := time.Now()
	n := r.produceLoad(b, topic)
	pElapsed := time.Since(start)
	t1 := r.h.cpu(b)
	start = time.Now()
	r.fetchLoad(b, topic, n)
	fElapsed := time.Since(start)
	t2 := r.h.cpu(b)
	k1 := r.h.kernel(b)
	// Only one load's records are held at a time.
	if err := r.kf.DeleteTopic(topic); err != nil {
		b.Fatal(err)
	}
	p, f := float64(t1-t0)/1e3/float64(n), float64(t2-t1)/1e3/float64(n)
	r.produceUs, r.fetchUs, r.sumUs = append(r.produceUs, p), append(r.fetchUs, f), append(r.sumUs, p+f)
	r.kernelUs = append(r.kernelUs, float64(k1-k0)/1e3/float64(n))
	r.produceRate = append(r.produceRate, float64(n)/pElapsed.Seconds())
	r.fetchRate = append(r.fetchRate, float64(n)/fElapsed.Seconds())
}

// sealOpen is an AES-GCM seal and open of a fixed plaintext.
type sealOpen struct {
	aead       cipher.AEAD
	nonce, pt  []byte
	ciphertext []byte
}

func newSealOpen(b *testing.B, newAEAD func([]byte) (cipher.AEAD, error), keyLen, n int) *sealOpen {
	g, err := newAEAD(make([]byte, keyLen))
	if err != nil {
		b.Fatal(err)
	}
	return &sealOpen{aead: g, nonce: make([]byte, g.NonceSize()), pt: make([]byte, n), ciphertext: make([]byte, 0, n+g.Overhead())}
}

func (s *sealOpen) run(b *testing.B) {
	c := s.aead.Seal(s.ciphertext[:0], s.nonce, s.pt, nil)
	if _, err := s.aead.Open(s.pt[:0], s.nonce, c, nil); err != nil {
		b.Fatal(err)
	}
}

// helper is a gateway running in a helper process.
type helper struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	stderr    *bytes.Buffer
	bootstrap string
}

func startHelper(b *testing.B, spec helperSpec) *helper {
	b.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		b.Fatal(err)
	}
	h := &helper{cmd: exec.Command(os.Args[0]), stderr: &bytes.Buffer{}}
	h.cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	suffix := spec.Mode
	if spec.Crypto != "" {
		suffix += "_" + spec.Crypto
	}
	if p := os.Getenv("XP_GATEWAY_CPUPROFILE"); p != "" {
		h.cmd.Env = append(h.cmd.Env, "XP_GATEWAY_CPUPROFILE="+p+"."+suffix)
	}
	if p := os.Getenv("XP_GATEWAY_MEMPROFILE"); p != "" {
		h.cmd.Env = append(h.cmd.Env, "XP_GATEWAY_MEMPROFILE="+p+"."+suffix)
	}
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "BOOTSTRAP ") {
		h.close()
		b.Fatalf("gateway helper: %q %v\n%s", line, err, h.stderr.String())
	}
	h.bootstrap = strings.TrimSpace(strings.TrimPrefix(line, "BOOTSTRAP "))
	return h
}

func (h *helper) cpu(b *testing.B) int64 {
	b.Helper()
	n, err := cpuNanosOf(h.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// kernel is the system CPU time the helper has used, in nanoseconds (10 ms
// ticks).
func (h *helper) kernel(b *testing.B) int64 {
	b.Helper()
	_, sys, err := procstat.UserSystem(h.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return sys.Nanoseconds()
}

func (h *helper) close() {
	h.stdin.Close()
	_ = h.cmd.Wait()
}

// cpuNanosOf is the CPU time process pid has used so far, in nanoseconds.
func cpuNanosOf(pid int) (int64, error) {
	d, err := procstat.CPU(pid)
	return d.Nanoseconds(), err
}
