package encrypt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/pki"
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
	Mode     string // proxy, encrypt, json, avro, protobuf
	Vault    string
	Schemas  string // directory of the load generator's schemas
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
		Client:   gateway.Client{Transport: gateway.TLS, Cert: s.Cert, Key: s.Key},
		Upstream: gateway.Upstream{Bootstrap: s.Upstream, Transport: gateway.TLS, CA: s.CA},
		Metrics:  gateway.Metrics{Listen: "off"},
	}
	var rules []TopicRule
	switch s.Mode {
	case "encrypt":
		rules = []TopicRule{{Pattern: "*", Mode: ModeEncrypt}}
	case EncodingJSON:
		rules = []TopicRule{{Pattern: "*", Mode: ModeFieldEncrypt, Encoding: EncodingJSON}}
	case EncodingAvro:
		rules = []TopicRule{{Pattern: "*", Mode: ModeFieldEncrypt, Encoding: EncodingAvro, AvroSchema: filepath.Join(s.Schemas, "record.avsc")}}
	case EncodingProtobuf:
		rules = []TopicRule{{Pattern: "*", Mode: ModeFieldEncrypt, Encoding: EncodingProtobuf, ProtobufDescriptorSet: filepath.Join(s.Schemas, "record.pb")}}
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
	return 0
}

// cpuNanos is the CPU time a process's threads have used so far, from
// their /proc schedstat (nanoseconds; Go threads do not exit).
func cpuNanos(pid int) (int64, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no threads of %d in /proc: %v", pid, err)
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that just exited
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, fmt.Errorf("%s: %q", t, b)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", t, err)
		}
		sum += n
	}
	return sum, nil
}

// BenchmarkGatewayCPU is the gateway's own CPU time per 1 KiB record
// (produce through it plus one consumer group fetching through it), TLS on
// both legs, measured on a gateway in a helper process: the passthrough
// proxy next to encrypt and field_encrypt of each encoding. The crypto
// floor is BenchmarkGatewayEncryption/floor. Targets (issue 7): the
// encryption modes add < 2.5 µs (json < 3.5 µs) per record.
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
	schemas, err := filepath.Abs("../../../runner/loadgen/schema")
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"proxy", "encrypt", EncodingJSON, EncodingAvro, EncodingProtobuf} {
		name := "field_encrypt/" + mode
		if mode == "proxy" || mode == "encrypt" {
			name = mode
		}
		b.Run(name, func(b *testing.B) {
			kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bench"), kfake.TLS(serverTLS))
			if err != nil {
				b.Fatal(err)
			}
			defer kf.Close()
			spec, _ := json.Marshal(helperSpec{Upstream: kf.ListenAddrs(), CA: ca.CAPath(), Cert: gwCert, Key: gwKey,
				Mode: mode, Vault: filepath.Join(dir, "kek.keys"), Schemas: schemas})
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+string(spec), "GOMAXPROCS=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { stdin.Close(); _ = cmd.Wait() }()
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "BOOTSTRAP ") {
				b.Fatalf("gateway helper: %q %v\n%s", line, err, stderr.String())
			}
			bootstrap := strings.TrimSpace(strings.TrimPrefix(line, "BOOTSTRAP "))
			clientTLS, err := ca.ClientTLS("", "")
			if err != nil {
				b.Fatal(err)
			}
			opts := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.DialTLSConfig(clientTLS)}
			// Batches of at most 128 KiB (the plan default batch_bytes):
			// encryption grows each record by about 110 bytes, which a
			// batch at the broker's 1 MB limit has no room for.
			prod, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic("bench"), kgo.ProducerLinger(2*time.Millisecond),
				kgo.ProducerBatchMaxBytes(128<<10))...)
			if err != nil {
				b.Fatal(err)
			}
			defer prod.Close()
			cons, err := kgo.NewClient(append(opts, kgo.ConsumeTopics("bench"), kgo.ConsumerGroup("bench-"+mode),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
			if err != nil {
				b.Fatal(err)
			}
			defer cons.Close()
			enc := mode
			if mode == "proxy" || mode == "encrypt" {
				enc = "bytes"
			}
			rng := rand.New(rand.NewPCG(3, 4))
			const per = 1000
			recs := make([]*kgo.Record, per)
			for i := range recs {
				recs[i] = &kgo.Record{Value: newPayload(rng, 1024).encode(enc, rng)}
			}
			round := func() {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				for _, r := range recs {
					// Produce keeps the first context it saw in a record.
					r.Partition, r.Offset, r.Context = 0, 0, nil
				}
				if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					b.Fatalf("produce: %v\n%s", err, stderr.String())
				}
				for got := 0; got < per; {
					fs := cons.PollFetches(ctx)
					if err := fs.Err(); err != nil {
						b.Fatalf("consume: %v\n%s", err, stderr.String())
					}
					got += fs.NumRecords()
				}
			}
			round() // warm up: connections, data keys, buffers
			before, err := cpuNanos(cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				round()
			}
			after, err := cpuNanos(cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(after-before)/1e3/float64(b.N*per), "gw_us/record")
		})
	}
}
