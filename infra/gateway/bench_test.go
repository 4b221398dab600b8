package gateway_test

import (
	"bufio"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/internal/aesgcm"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// gatewayProcess runs a gateway in a process of its own (this test binary
// in helper mode) so that its CPU time, read from its own getrusage through
// /metrics, is the gateway's alone: the load and the broker run here.
func gatewayProcess(b *testing.B, cfg *gateway.Config) (bootstrap, metricsURL string) {
	b.Helper()
	y, err := yaml.Marshal(cfg)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, y, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), gateway.HelperEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		b.Fatalf("gateway helper: %v", err)
	}
	var addrs struct{ Bootstrap, Metrics string }
	if err := json.Unmarshal(line, &addrs); err != nil {
		b.Fatalf("gateway helper said %q: %v", line, err)
	}
	return addrs.Bootstrap, addrs.Metrics
}

// cpuSeconds scrapes process_cpu_seconds_total from a gateway.
func cpuSeconds(b *testing.B, url string) float64 {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, "process_cpu_seconds_total "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return f
		}
	}
	b.Fatal("no process_cpu_seconds_total in /metrics")
	return 0
}

func benchConfig(upstream []string) *gateway.Config {
	zero := 0
	return &gateway.Config{
		Listen:   gateway.Listen{Host: "127.0.0.1", BootstrapPort: &zero, NodePortBase: &zero},
		Upstream: gateway.Upstream{Bootstrap: upstream},
		Metrics:  gateway.Metrics{Listen: "127.0.0.1:0"},
	}
}

// BenchmarkGatewayPublishLatency: the load generator publishes 1 KiB
// records at 10k msg/s (open loop, acks=all, linger 1 ms, 6 partitions)
// straight to the broker and through a passthrough gateway against the same
// embedded broker, on plaintext (the target: under 0.2 ms added at p50)
// and with TLS on every leg (the plans' default gateway transport). Per
// transport the four loads run in ABBA order (direct, gateway, gateway,
// direct: a machine getting busier or quieter affects both arms alike) and
// each arm reports the mean of its two runs' percentiles; the gateway arm
// also reports the gateway's CPU per record at this rate. 8 × (1 s warm-up
// + 3 s) whatever b.N.
func BenchmarkGatewayPublishLatency(b *testing.B) {
	for _, transport := range []string{planner.SecurityPlaintext, planner.SecurityTLS} {
		b.Run(transport, func(b *testing.B) { publishLatency(b, transport) })
	}
}

func publishLatency(b *testing.B, transport string) {
	props := map[string]string{"security.protocol": "plaintext"}
	var opts []kfake.Opt
	var ca *pki.Authority
	if transport == planner.SecurityTLS {
		var err error
		if ca, err = pki.New(b.TempDir()); err != nil {
			b.Fatal(err)
		}
		bc, bk, err := ca.Server("broker")
		if err != nil {
			b.Fatal(err)
		}
		srv, err := ca.ServerTLS(bc, bk, false)
		if err != nil {
			b.Fatal(err)
		}
		opts = append(opts, kfake.TLS(srv))
		props = map[string]string{"security.protocol": "ssl", "ssl.ca.location": ca.CAPath()}
	}
	kf, err := kfake.NewCluster(append(opts, kfake.NumBrokers(1))...)
	if err != nil {
		b.Fatal(err)
	}
	defer kf.Close()
	cfg := benchConfig(kf.ListenAddrs())
	if transport == planner.SecurityTLS {
		gc, gk, err := ca.Gateway("gateway")
		if err != nil {
			b.Fatal(err)
		}
		cfg.Client = gateway.Client{Transport: planner.SecurityTLS, Cert: gc, Key: gk}
		cfg.Upstream.Transport, cfg.Upstream.CA = planner.SecurityTLS, ca.CAPath()
	}
	gwBoot, gwMetrics := gatewayProcess(b, cfg)
	run := func(boot string) *loadgen.Result {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p := map[string]string{"bootstrap.servers": boot}
		for k, v := range props {
			p[k] = v
		}
		res, err := loadgen.Run(ctx, loadgen.Config{
			Bootstrap: []string{boot}, ClientConfig: p,
			Rate: 10000, MessageSize: 1024, Partitions: 6, ConsumerGroups: 0,
			Warmup: time.Second, Duration: 3 * time.Second, DrainTimeout: 10 * time.Second, Seed: 1,
		})
		if err != nil {
			b.Fatal(err)
		}
		if !res.Healthy {
			b.Logf("run against %s not healthy: %v", boot, res.Reasons)
		}
		return res
	}
	type arm struct {
		p50, p99, rate, cpuUs float64
	}
	var direct, via arm
	add := func(a *arm, r *loadgen.Result) {
		a.p50 += r.PublishLatencyMs.P50 / 2
		a.p99 += r.PublishLatencyMs.P99 / 2
		a.rate += r.PublishRate / 2
	}
	viaRun := func() {
		before := cpuSeconds(b, gwMetrics)
		r := run(gwBoot)
		if n := r.Published + r.Warmup.Published; n > 0 {
			via.cpuUs += (cpuSeconds(b, gwMetrics) - before) * 1e6 / float64(n) / 2
		}
		add(&via, r)
	}
	add(&direct, run(kf.ListenAddrs()[0]))
	viaRun()
	viaRun()
	add(&direct, run(kf.ListenAddrs()[0]))
	b.Run("direct", func(b *testing.B) {
		b.ReportMetric(direct.p50, "p50_ms")
		b.ReportMetric(direct.p99, "p99_ms")
		b.ReportMetric(direct.rate, "msg/s")
	})
	b.Run("gateway", func(b *testing.B) {
		b.ReportMetric(via.p50, "p50_ms")
		b.ReportMetric(via.p99, "p99_ms")
		b.ReportMetric(via.rate, "msg/s")
		b.ReportMetric(via.p50-direct.p50, "added_p50_ms")
		b.ReportMetric(via.p99-direct.p99, "added_p99_ms")
		b.ReportMetric(via.cpuUs, "gw_cpu_us/record")
	})
}

// tlsUpstream is a kfake cluster serving TLS that discards produced records
// and answers every fetch with a synthetic batch of 1 KiB records, so a
// saturating load needs no broker memory.
func tlsUpstream(b *testing.B) (*kfake.Cluster, *pki.Authority, string, string) {
	b.Helper()
	ca, err := pki.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	bc, bk, err := ca.Server("broker")
	if err != nil {
		b.Fatal(err)
	}
	gc, gk, err := ca.Gateway("gateway")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := ca.ServerTLS(bc, bk, false)
	if err != nil {
		b.Fatal(err)
	}
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(srv), kfake.SeedTopics(6, "cpu"),
		kfake.BlackholeProduce(), kfake.SyntheticFetch(kfake.SyntheticBatch{RecordBytes: 1024, Records: 256, RandomFrac: 1}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(kf.Close)
	return kf, ca, gc, gk
}

// BenchmarkGatewayCPU: gateway CPU time per 1 KiB record at saturation with
// TLS on both legs, from the gateway process's own getrusage, for produce
// (a record crosses the gateway once, client leg to broker leg) and fetch
// (broker leg to client leg); next to it the floor, AES-GCM seal plus open
// of 1 KiB (one record decrypted from one leg and encrypted onto the
// other). Target: under 1.5 µs per record. Each sub-benchmark runs its
// load three times (each bounded to 600k records or 3 s) and reports the
// median, min and max.
func BenchmarkGatewayCPU(b *testing.B) {
	kf, ca, gc, gk := tlsUpstream(b)
	cfg := benchConfig(kf.ListenAddrs())
	cfg.Client = gateway.Client{Transport: planner.SecurityTLS, Cert: gc, Key: gk}
	cfg.Upstream.Transport, cfg.Upstream.CA = planner.SecurityTLS, ca.CAPath()
	boot, metrics := gatewayProcess(b, cfg)
	clientTLS, err := ca.ClientTLS("", "")
	if err != nil {
		b.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(boot), kgo.DialTLSConfig(clientTLS)}
	const maxRecords, maxTime = 600_000, 3 * time.Second

	// report runs a load three times and reports the median CPU per record
	// (and the spread): other work on a shared machine inflates single
	// runs by a third or more.
	report := func(b *testing.B, load func() (records int64, elapsed time.Duration)) {
		var perRecord, rates []float64
		for range 3 {
			before := cpuSeconds(b, metrics)
			n, elapsed := load()
			cpu := cpuSeconds(b, metrics) - before
			perRecord = append(perRecord, cpu*1e6/float64(n))
			rates = append(rates, float64(n)/elapsed.Seconds())
		}
		sort.Float64s(perRecord)
		sort.Float64s(rates)
		b.ReportMetric(perRecord[1], "gw_cpu_us/record")
		b.ReportMetric(perRecord[0], "gw_cpu_us/record_min")
		b.ReportMetric(perRecord[2], "gw_cpu_us/record_max")
		b.ReportMetric(1/perRecord[1]*1e6, "records/gw_cpu_s")
		b.ReportMetric(rates[1], "records/s")
	}

	b.Run("produce_tls_both_legs", func(b *testing.B) {
		cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("cpu"), kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
			kgo.MaxBufferedRecords(20000), kgo.MaxProduceRequestsInflightPerBroker(8),
			kgo.ProducerBatchCompression(kgo.NoCompression()))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		// Distinct random values: nothing for TLS or a codec to shortcut.
		pool := make([]byte, 8<<20)
		_, _ = rand.Read(pool)
		value := func(i int) []byte { o := (i * 1031) % (len(pool) - 1024); return pool[o : o+1024] }
		ctx := context.Background()
		// Warm the connections before measuring.
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value(0)}).FirstErr(); err != nil {
			b.Fatal(err)
		}
		report(b, func() (int64, time.Duration) {
			var acked, failed atomic.Int64
			start := time.Now()
			for i := 0; i < maxRecords && time.Since(start) < maxTime; i++ {
				cl.Produce(ctx, &kgo.Record{Value: value(i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						failed.Add(1)
					} else {
						acked.Add(1)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			if failed.Load() > 0 {
				b.Fatalf("%d records failed", failed.Load())
			}
			return acked.Load(), time.Since(start)
		})
	})
	b.Run("fetch_tls_both_legs", func(b *testing.B) {
		cl, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("cpu"), kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(4<<20))...)
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*maxTime)
		defer cancel()
		cl.PollFetches(ctx) // warm up
		report(b, func() (int64, time.Duration) {
			var n int64
			start := time.Now()
			for n < maxRecords && time.Since(start) < maxTime {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					b.Fatal(err)
				}
				n += int64(fs.NumRecords())
			}
			return n, time.Since(start)
		})
	})
	// The floor, with the AES-GCM the gateway's record layer uses (VAES
	// where the CPU has it) and with crypto/tls's (Go's crypto/aes).
	for _, fl := range []struct {
		name string
		aead func([]byte) (cipher.AEAD, error)
	}{{"aes_gcm_floor", aesgcm.New}, {"aes_gcm_floor_crypto_aes", aesgcm.NewStd}} {
		b.Run(fl.name, func(b *testing.B) {
			// The cipher Go's TLS 1.3 picks with AES hardware: AES-128-GCM.
			suite := tls.CipherSuiteName(tls.TLS_AES_128_GCM_SHA256)
			aead, err := fl.aead(make([]byte, 16))
			if err != nil {
				b.Fatal(err)
			}
			nonce := make([]byte, aead.NonceSize())
			msg := make([]byte, 1024)
			buf := make([]byte, 0, 1024+aead.Overhead())
			b.SetBytes(1024)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sealed := aead.Seal(buf[:0], nonce, msg, nil)
				if _, err := aead.Open(msg[:0], nonce, sealed, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "us/record")
			b.Logf("floor: %s seal+open of 1 KiB per record crossing the gateway", suite)
		})
	}
}
