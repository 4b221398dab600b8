package kroxylicious_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kroxylicious"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/infra/remote"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// Loads of BenchmarkGatewayVsKroxylicious: 1 KiB records, acks=all, one
// producer and one consumer group, 6 partitions; a fixed rate (publish
// latency is read against the direct path at the same rate) and
// saturation (closed loop, records in flight bounded by the producer's
// buffer).
const (
	vsRate     = 2000
	vsSize     = 1024
	vsRounds   = 3
	vsWarmup   = 2 * time.Second
	vsDuration = 5 * time.Second
)

// vsGateway is one gateway under load: a process whose CPU and memory are
// read from /proc.
type vsGateway struct {
	name      string // builtin_proxy, kroxylicious_encrypt, ... ("direct": none)
	bootstrap string
	pid       int
	stop      func()
	// Per round: gateway CPU per record (µs, produce + fetch), publish
	// p50/p99 (ms), records/s; by load kind (fixed, max).
	cpuUs, p50, p99, rate map[string][]float64
}

// BenchmarkGatewayVsKroxylicious measures xp's builtin gateway (crypto
// std) and Kroxylicious (the release make kroxylicious-dist assembled, its
// Record Encryption on the in-memory KMS), each as passthrough (proxy) and
// encrypting (encrypt) gateway, TLS on both legs, in front of the same
// broker (one Apache Kafka broker, the 4.x release of make kafka-dist, a
// JVM of its own with kafkaproc's default heap), on the same loads: a fixed rate and saturation, in rounds, each round every
// gateway (and the direct path) in a fresh shuffled order. Reported per
// gateway and load: the gateway process's CPU per record (user + system
// from /proc over the measured window, divided by the records published,
// each produced and fetched once through it), publish latency p50/p99 and
// what the gateway adds to the direct path's (fixed rate), records/s
// (saturation), and the gateway's resident memory after the loads and at
// its peak. Medians over the rounds. No target: the two are reported side
// by side.
func BenchmarkGatewayVsKroxylicious(b *testing.B) {
	rel := disttest.Kroxylicious(b)
	dir := b.TempDir()
	r, err := kroxylicious.Prepare(context.Background(), dir, rel.Path, rel.SHA512)
	if err != nil {
		b.Fatal(err)
	}
	home := r.Home
	java, err := kroxylicious.JavaHome(r.MinJava())
	if err != nil {
		b.Fatal(err)
	}
	xp := filepath.Join(dir, "xp")
	build := exec.Command("go", "build", "-o", xp, "./cmd/xp")
	build.Dir = filepath.Dir(filepath.Dir(disttest.Dir(b)))
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building xp: %v\n%s", err, out)
	}
	c := kafkatest.Start(b, kafkatest.Options{Heap: kafkaproc.DefaultHeap})
	nodeID := c.Brokers()[0].ID
	tlsMode := c.Modes()[planner.SecurityTLS]
	props, err := kafkaconf.ReadClientConfig(tlsMode.ClientConfig)
	if err != nil {
		b.Fatal(err)
	}
	cert, key, err := c.Authority().Gateway("gateway")
	if err != nil {
		b.Fatal(err)
	}
	upstream := tlsMode.Bootstrap
	vault := filepath.Join(dir, "kek.keys")
	if err := envelope.AddKey(vault, "k1"); err != nil {
		b.Fatal(err)
	}
	kek, err := kroxylicious.NewKEK(kroxylicious.DefaultKEK)
	if err != nil {
		b.Fatal(err)
	}
	gws := []*vsGateway{{name: "direct", bootstrap: strings.Join(tlsMode.Bootstrap, ","), stop: func() {}}}
	for _, mode := range []string{"proxy", "encrypt"} {
		// xp's gateway, as a campaign runs it on a gateway host.
		cfg, err := remote.GatewayConfigYAML(local.GatewaySetup{Host: "127.0.0.1", Transport: planner.SecurityTLS, Upstream: upstream,
			CA: c.Authority().CAPath(), Cert: cert, Key: key, Crypto: "std"}, remote.GatewaySpec{Key: mode, Security: mode, Transport: planner.SecurityTLS}, vault, "")
		if err != nil {
			b.Fatal(err)
		}
		gws = append(gws, startBuiltin(b, xp, dir, "builtin_"+mode, cfg))
		// Kroxylicious, as the kroxylicious gateway kind runs it.
		port := freeBase(b, 3)
		s := kroxylicious.Setup{Version: r.Version, Name: "kroxylicious-" + mode, Host: "127.0.0.1", Port: port, Brokers: 1, FirstNodeID: nodeID, Upstream: upstream,
			Transport: planner.SecurityTLS, CA: c.Authority().CAPath(), Cert: cert, Key: key, Mode: mode, ManagementPort: port + 2}
		if mode == "encrypt" {
			s.KMS.InMemory = &kroxylicious.InMemory{Alias: kek.Alias, KEKs: []kroxylicious.KEK{kek}}
		}
		gws = append(gws, startKroxylicious(b, home, java, dir, s, props))
	}
	for _, g := range gws {
		defer g.stop()
		g.cpuUs, g.p50, g.p99, g.rate = map[string][]float64{}, map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		// The JVM's JIT (a cold Kroxylicious serves a few hundred records
		// a second), and every gateway's connections and buffers, warm up
		// before anything counts: loads at both rates until one saturating
		// load is healthy, at most five.
		for try := 1; ; try++ {
			if _, _, err := vsRun(g, props, vsRate, vsDuration); err != nil && try >= 5 {
				b.Fatalf("%s: warming up: %v", g.name, err)
			}
			res, _, err := vsRun(g, props, 0, vsDuration)
			if err == nil && res.Healthy {
				break
			}
			if try >= 5 {
				b.Fatalf("%s: still unhealthy after %d warm-up loads: %v %v", g.name, try, err, res)
			}
		}
	}
	order := rand.New(rand.NewPCG(24, 1))
	for range vsRounds {
		for _, kind := range []string{"fixed", "max"} {
			rate := int64(vsRate)
			if kind == "max" {
				rate = 0
			}
			for _, i := range order.Perm(len(gws)) {
				g := gws[i]
				res, cpu := vsLoad(b, g, props, rate, vsDuration)
				g.p50[kind] = append(g.p50[kind], res.PublishLatencyMs.P50)
				g.p99[kind] = append(g.p99[kind], res.PublishLatencyMs.P99)
				g.rate[kind] = append(g.rate[kind], res.PublishRate)
				if g.pid != 0 {
					g.cpuUs[kind] = append(g.cpuUs[kind], float64(cpu.Microseconds())/(res.PublishRate*vsDuration.Seconds()))
				}
			}
		}
	}
	direct := gws[0]
	for _, kind := range []string{"fixed", "max"} {
		for _, g := range gws {
			name := "fixed_2k/" + g.name
			if kind == "max" {
				name = "saturation/" + g.name
			}
			b.Run(name, func(b *testing.B) {
				if kind == "fixed" {
					b.ReportMetric(median(g.p50[kind]), "publish_p50_ms")
					b.ReportMetric(median(g.p99[kind]), "publish_p99_ms")
					if g.pid != 0 {
						b.ReportMetric(median(g.p50[kind])-median(direct.p50[kind]), "added_p50_ms")
						b.ReportMetric(median(g.p99[kind])-median(direct.p99[kind]), "added_p99_ms")
					}
				} else {
					b.ReportMetric(median(g.rate[kind]), "records/s")
				}
				if g.pid != 0 {
					b.ReportMetric(median(g.cpuUs[kind]), "gw_cpu_us/record")
					b.ReportMetric(procstat.RSS(g.pid), "gw_rss_MiB")
					b.ReportMetric(peakRSS(g.pid), "gw_peak_rss_MiB")
				}
			})
		}
	}
}

// vsLoad runs one load through g (rate 0: saturation) and returns its
// result and g's CPU time over the measured window; a load that fails, or
// is unhealthy, fails the benchmark.
func vsLoad(b *testing.B, g *vsGateway, props map[string]string, rate int64, d time.Duration) (*loadgen.Result, time.Duration) {
	b.Helper()
	res, cpu, err := vsRun(g, props, rate, d)
	if err != nil {
		b.Fatalf("%s: %v", g.name, err)
	}
	if res.Published == 0 || rate > 0 && !res.Healthy {
		b.Fatalf("%s: unhealthy load at %d msg/s: %v (published %d)", g.name, rate, res.Reasons, res.Published)
	}
	return res, cpu
}

func vsRun(g *vsGateway, props map[string]string, rate int64, d time.Duration) (*loadgen.Result, time.Duration, error) {
	var start, end time.Duration
	var cpuErr error
	cpu := func() time.Duration {
		if g.pid == 0 {
			return 0
		}
		// user + system from /proc/PID/stat: a JVM's exited threads count
		// too, which per-thread schedstat would miss.
		u, s, err := procstat.UserSystem(g.pid)
		if err != nil {
			cpuErr = err
		}
		return u + s
	}
	res, err := loadgen.Run(context.Background(), loadgen.Config{Bootstrap: []string{g.bootstrap}, ClientConfig: props, Rate: rate,
		MessageSize: vsSize, Partitions: 6, ConsumerGroups: 1, Acks: "all", Warmup: vsWarmup, Duration: d, DrainTimeout: 30 * time.Second,
		Seed: 24, OnPhase: func(phase string, _ time.Time) {
			switch phase {
			case "measure":
				start = cpu()
			case "drain":
				end = cpu()
			}
		}})
	if err == nil {
		err = cpuErr
	}
	return res, end - start, err
}

// startBuiltin runs `xp gateway` with cfg and waits for its ready file.
func startBuiltin(b *testing.B, xp, dir, name string, cfg []byte) *vsGateway {
	b.Helper()
	path := filepath.Join(dir, name+".yaml")
	ready := filepath.Join(dir, name+".ready")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(xp, "gateway", "--config", path, "--ready-file", ready)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop := func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var r remote.GatewayReady
		if data, err := os.ReadFile(ready); err == nil && json.Unmarshal(data, &r) == nil {
			return &vsGateway{name: name, bootstrap: r.Bootstrap, pid: cmd.Process.Pid, stop: stop}
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("%s: not ready in 30s", name)
		}
	}
}

// startKroxylicious runs Kroxylicious with s's config.
func startKroxylicious(b *testing.B, home, java, dir string, s kroxylicious.Setup, props map[string]string) *vsGateway {
	b.Helper()
	cfg, err := kroxylicious.Config(s)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, s.Name+".yaml")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	tlsCfg, err := kafkaconf.TLSConfig(props)
	if err != nil {
		b.Fatal(err)
	}
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	p, err := kroxylicious.Start(context.Background(), kroxylicious.Options{Home: home, Config: path, JavaHome: java,
		JavaOptions: "-Xms512m -Xmx512m", Ready: addr, ReadyTLS: tlsCfg, Timeout: 3 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	return &vsGateway{name: strings.ReplaceAll(s.Name, "-", "_"), bootstrap: addr, pid: p.Pid(), stop: func() { p.Stop() }}
}

func freeBase(b *testing.B, n int) int {
	b.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n < 65535
		for p := base; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if ok = err == nil; ok {
				l.Close()
			}
		}
		if ok {
			return base
		}
	}
	b.Fatal("no free consecutive ports")
	return 0
}

// peakRSS is the process's peak resident memory (VmHWM) in MiB.
func peakRSS(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return -1
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
