package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

func newLoadgenCmd(st *state) *cobra.Command {
	var fl loadgenFlags
	cmd := &cobra.Command{
		Use:   "loadgen",
		Short: "One load run against given bootstrap servers",
		Long: `Runs producers and consumer groups against a cluster and reports publish
latency, end-to-end latency and send delay (HDR histograms), rates, backlog
and health. A fixed --rate is open loop (latency from the intended send
time); --rate max is closed loop with --concurrency records in flight per
producer. --client java runs the producers and consumers on xp's Java load
generator (Apache Kafka's kafka-clients; make java-client), --client
librdkafka on its load generator in C (librdkafka; make rdkafka-client),
with the same schedule, payloads, health rules and result
(docs/loadgen.md#clients).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			full, err := fl.config(st.getenv)
			if err != nil {
				return err
			}
			return runLoadgen(c.Context(), st, full, fl.asJSON)
		},
	}
	fl.register(cmd)
	return cmd
}

// loadgenFlags are xp loadgen's flags: most set the load generator's
// config directly, the others are read into it by config.
type loadgenFlags struct {
	cfg          loadgen.Config
	clientConfig string
	bootstrap    string
	rate         string
	jvmOpts      string
	asJSON       bool
}

// register defines the flags on cmd.
func (fl *loadgenFlags) register(cmd *cobra.Command) {
	cfg := &fl.cfg
	f := cmd.Flags()
	f.StringVar(&fl.clientConfig, "client-config", "", "librdkafka client property file (security.protocol, ssl.*, sasl.*, bootstrap.servers)")
	f.StringVar(&fl.bootstrap, "bootstrap", "", "bootstrap servers host:port[,host:port] (overrides bootstrap.servers)")
	f.StringVar(&cfg.Topic, "topic", "", "topic, or with --topics N > 1 the prefix of topics T-0 .. T-(N-1) (default: fresh topics per run, deleted after)")
	f.IntVar(&cfg.Topics, "topics", 1, "number of topics; each producer sends to them in turn, every group consumes all")
	f.BoolVar(&cfg.KeepTopic, "keep-topic", false, "keep the fresh topics and the consumer groups after the run")
	f.IntVar(&cfg.Partitions, "partitions", 6, "partitions of a created topic")
	f.IntVar(&cfg.ReplicationFactor, "replication-factor", 0, "replication factor of a created topic (0: broker default)")
	f.IntVar(&cfg.MinInsyncReplicas, "min-insync-replicas", 0, "min.insync.replicas of a created topic (0: broker default)")
	f.IntVar(&cfg.MessageSize, "message-size", 1024, "record value size in bytes")
	f.StringVar(&fl.rate, "rate", "1000", "total target rate in msg/s, or max (closed loop)")
	f.IntVar(&cfg.Concurrency, "concurrency", 0, "records in flight per producer with --rate max (default: as many as a 32 MiB producer buffer holds, as Kafka's buffer.memory)")
	f.IntVar(&cfg.Producers, "producers", 1, "producer clients")
	f.IntVar(&cfg.ConsumerGroups, "consumer-groups", 1, "consumer groups, each reading every record")
	f.IntVar(&cfg.ConsumersPerGroup, "consumers-per-group", 1, "consumers in each group")
	f.StringVar(&cfg.Acks, "acks", "all", "0, 1 or all (idempotence only with all)")
	f.IntVar(&cfg.LingerMs, "linger-ms", 1, "producer linger in ms (linger.ms)")
	f.IntVar(&cfg.BatchBytes, "batch-bytes", 131072, "maximum batch size in bytes (batch.size)")
	f.StringVar(&cfg.Compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	f.StringVar(&cfg.Encoding, "encoding", "bytes", "bytes, json, avro or protobuf")
	f.DurationVar(&cfg.Warmup, "warmup", 10*time.Second, "warm-up, excluded from results")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "measurement window")
	f.DurationVar(&cfg.DrainTimeout, "drain-timeout", 30*time.Second, "time allowed after the window for the backlog to reach zero")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed of the payloads")
	f.StringVar(&cfg.Client, "client", planner.ClientFranzGo, "the Kafka client that runs the load: franz-go, java (xp's Java load generator on kafka-clients) or librdkafka (xp's load generator in C on librdkafka)")
	f.StringVar(&cfg.JavaClient, "java-client", "", "with --client java: the Java client release, its .tgz or unpacked directory (default $XP_JAVA_CLIENT, else the newest out/dist/xp-java-client-*.tgz; make java-client)")
	f.StringVar(&cfg.RdkafkaClient, "rdkafka-client", "", "with --client librdkafka: the librdkafka client release, its .tgz or unpacked directory (default $XP_RDKAFKA_CLIENT, else the newest out/dist/xp-rdkafka-client-*.tgz; make rdkafka-client)")
	f.StringVar(&cfg.Java, "java", "", "with --client java: the java binary (default java on PATH)")
	f.StringVar(&fl.jvmOpts, "jvm-opts", "", "with --client java: JVM flags, space-separated, replacing the default "+strings.Join(loadgen.DefaultJVMOpts, " "))
	f.StringVar(&cfg.TLSVersion, "tls-version", "default", "TLS version the clients allow: default, 1.2 or 1.3 (a row's tls_version)")
	f.StringVar(&cfg.TLSCipher, "tls-cipher", "default", "bulk cipher of the TLS suite: default, aes128-gcm, aes256-gcm or chacha20-poly1305 (a row's tls_cipher; needs --tls-version)")
	f.StringVar(&cfg.SASLMechanism, "sasl-mechanism", "", "SASL mechanism replacing the client config's: scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi (a row's sasl_mechanism; the last two need their properties in the client config)")
	f.IntVar(&cfg.ConnectionChurn, "connection-churn", 0, "records each producer sends before it reopens its client (0: one client for the run)")
	f.BoolVar(&fl.asJSON, "json", false, "print the result as one JSON object")
}

// config is the load generator's full config from the flags: the client
// config file and bootstrap servers read in, the rate parsed, defaults
// filled and the whole validated. Its errors are usage errors.
func (fl *loadgenFlags) config(getenv func(string) string) (loadgen.Config, error) {
	cfg := &fl.cfg
	cfg.JVMOpts = strings.Fields(fl.jvmOpts)
	if cfg.Client == planner.ClientJava && cfg.JavaClient == "" {
		cfg.JavaClient = defaultJavaClient(getenv)
	}
	if cfg.Client == planner.ClientLibrdkafka && cfg.RdkafkaClient == "" {
		cfg.RdkafkaClient = defaultRdkafkaClient(getenv)
	}
	if fl.clientConfig != "" {
		props, err := kafkaconf.ReadClientConfig(fl.clientConfig)
		if err != nil {
			return loadgen.Config{}, usageErr(fmt.Errorf("--client-config: %w", err))
		}
		cfg.ClientConfig = props
	}
	if fl.bootstrap != "" {
		for _, b := range strings.Split(fl.bootstrap, ",") {
			if b = strings.TrimSpace(b); b != "" {
				cfg.Bootstrap = append(cfg.Bootstrap, b)
			}
		}
	}
	if err := checkLoadgenFlags(cfg); err != nil {
		return loadgen.Config{}, err
	}
	r, err := loadgen.ParseRate(fl.rate)
	if err != nil {
		return loadgen.Config{}, usageErr(err)
	}
	cfg.Rate = r
	full := cfg.WithDefaults()
	if err := full.Validate(); err != nil {
		return loadgen.Config{}, usageErr(err)
	}
	return full, nil
}

// defaultJavaClient is the Java client release --java-client defaults to:
// $XP_JAVA_CLIENT, else the newest out/dist/xp-java-client-*.tgz under
// the working directory (make java-client's), else none.
func defaultJavaClient(getenv func(string) string) string {
	return defaultClientRelease(getenv, "XP_JAVA_CLIENT", "xp-java-client-")
}

// defaultRdkafkaClient is the librdkafka client release --rdkafka-client
// defaults to: $XP_RDKAFKA_CLIENT, else the newest
// out/dist/xp-rdkafka-client-*.tgz (make rdkafka-client's), else none.
func defaultRdkafkaClient(getenv func(string) string) string {
	return defaultClientRelease(getenv, "XP_RDKAFKA_CLIENT", "xp-rdkafka-client-")
}

// defaultClientRelease is $env, else the newest out/dist/PREFIX*.tgz,
// else "".
func defaultClientRelease(getenv func(string) string, env, prefix string) string {
	if p := getenv(env); p != "" {
		return p
	}
	found, _ := filepath.Glob(filepath.Join("out", "dist", prefix+"*.tgz"))
	newest := ""
	for _, f := range found {
		v := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), prefix), ".tgz")
		if newest == "" || release.AtLeast(v, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(newest), prefix), ".tgz")) {
			newest = f
		}
	}
	return newest
}

// checkLoadgenFlags refuses counts below 1 and durations not positive:
// zero means "default" inside loadgen.Config; on the command line it is
// a mistake.
func checkLoadgenFlags(cfg *loadgen.Config) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"topics", cfg.Topics}, {"partitions", cfg.Partitions}, {"message-size", cfg.MessageSize},
		{"producers", cfg.Producers}, {"consumers-per-group", cfg.ConsumersPerGroup}, {"batch-bytes", cfg.BatchBytes}} {
		if f.v < 1 {
			return usageErrf("--%s %d: want at least 1", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"duration", cfg.Duration}, {"drain-timeout", cfg.DrainTimeout}} {
		if f.v <= 0 {
			return usageErrf("--%s %v: want a positive duration such as 30s", f.name, f.v)
		}
	}
	return nil
}

// runLoadgen runs the load of cfg until done or interrupted, printing
// its phases on stderr and its result on stdout (as JSON with asJSON).
func runLoadgen(ctx context.Context, st *state, cfg loadgen.Config, asJSON bool) error {
	ctx, stop := st.interruptible(ctx)
	defer stop()
	cfg.OnPhase = func(phase string, ends time.Time) {
		if phase == "done" {
			return
		}
		fmt.Fprintf(st.stderr, "xp loadgen: %s until %s\n", phase, ends.Format("15:04:05"))
	}
	res, err := loadgen.Run(ctx, cfg)
	if err != nil && res == nil {
		if errors.Is(err, loadgen.ErrConfig) {
			return usageErr(err)
		}
		if errors.Is(err, context.Canceled) {
			return withCode(exitInterrupted, errors.New("interrupted"))
		}
		return err
	}
	if asJSON {
		b, jerr := json.Marshal(res)
		if jerr != nil {
			return jerr
		}
		fmt.Fprintf(st.stdout, "%s\n", b)
	} else {
		printResult(st, res)
	}
	if err != nil {
		return withCode(exitInterrupted, errors.New("interrupted"))
	}
	if !res.Healthy {
		return withCode(exitInvalidRuns, fmt.Errorf("run unhealthy: %s", strings.Join(res.Reasons, "; ")))
	}
	return nil
}

func printResult(st *state, r *loadgen.Result) {
	w := st.stdout
	health := "healthy"
	if !r.Healthy {
		health = "UNHEALTHY: " + strings.Join(r.Reasons, "; ")
	}
	fmt.Fprintf(w, "%s\n", health)
	fmt.Fprintf(w, "client %s (%s; %s)\n", r.Client.Name, r.Client.Version, r.Client.Runtime)
	if len(r.Topics) > 1 {
		for _, t := range r.Topics {
			fmt.Fprintf(w, "topic %s (%d partitions)  published %d  consumed %d\n", t.Topic, t.Partitions, t.Published, t.Consumed)
		}
	}
	rate := "max"
	if r.TargetRate > 0 {
		rate = fmt.Sprint(int64(r.TargetRate))
	}
	fmt.Fprintf(w, "target %s msg/s  published %d (%.1f msg/s)  consumed %d (%.1f msg/s)  errors %d  backlog max %d  drain %.2fs  cpu %.2fs\n",
		rate, r.Published, r.PublishRate, r.Consumed, r.ConsumeRate, r.Errors, r.BacklogMax, r.DrainS, r.ClientCPUS)
	row := func(name string, p loadgen.Percentiles) {
		fmt.Fprintf(w, "%-14s p50 %8.3f  p90 %8.3f  p99 %8.3f  p99.9 %8.3f  p99.99 %8.3f  max %8.3f ms\n",
			name, p.P50, p.P90, p.P99, p.P999, p.P9999, p.Max)
	}
	row("publish", r.PublishLatencyMs)
	row("end-to-end", r.E2ELatencyMs)
	row("send delay", r.SendDelayMs)
	if s := r.Scheduling; s != nil && s.Pacers > 0 {
		fmt.Fprintf(w, "pacers waited %.1f ms for a CPU over %d turns  host steal %.2f%%\n", s.PacerWaitMs, s.PacerRuns, s.StealPct)
	}
}
