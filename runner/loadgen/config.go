// Package loadgen is xp's load generator: open-loop (fixed rate, latency from
// the intended send time, no coordinated omission) or closed-loop producers,
// consumer groups measuring end-to-end latency from a header, a digest check
// on every consumed record, HDR histograms per second and per run, and the
// health rules of a run. See docs/loadgen.md.
package loadgen

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// Encodings of the payload.
const (
	EncodingBytes    = "bytes"
	EncodingJSON     = "json"
	EncodingAvro     = "avro"
	EncodingProtobuf = "protobuf"
)

// Config is one load run; one field per `xp loadgen` flag.
type Config struct {
	// Bootstrap overrides bootstrap.servers of ClientConfig when non-empty.
	Bootstrap []string
	// ClientConfig holds librdkafka client properties (security, SASL, TLS
	// files), as read by kafkaconf.ReadClientConfig.
	ClientConfig map[string]string
	// Mode names the security mode in errors; default derived from
	// ClientConfig (plaintext, tls, mtls, sasl_ssl).
	Mode string
	// Topic to use; default a fresh topic per run, deleted after unless
	// KeepTopic, as are the run's consumer groups (GroupName). A named topic is created when missing and never deleted
	// if it already existed. With Topics > 1 it is the prefix: the topics
	// are Topic-0 .. Topic-(Topics-1).
	Topic     string
	KeepTopic bool
	// Topics is the number of topics; 0 or 1 means one. Each producer
	// sends its records to them in turn (round robin) and every consumer
	// group consumes all of them.
	Topics int
	// Partitions of a created topic; default 6.
	Partitions int
	// ReplicationFactor of a created topic; default 0, the broker's default
	// (Kafka: default.replication.factor).
	ReplicationFactor int
	// MinInsyncReplicas sets min.insync.replicas on a created topic; 0
	// leaves the broker's default.
	MinInsyncReplicas int
	// MessageSize is the record value size in bytes; default 1024.
	MessageSize int
	// Rate is the total target publish rate in msg/s; 0 means max (closed
	// loop with InFlight records in flight per producer).
	Rate int64
	// Concurrency is records in flight per producer in closed loop, the
	// closed-loop users model. 0 with Rate max: as many as the producer's
	// buffer holds (InFlight), which saturates the way Kafka's
	// ProducerPerformance --throughput -1 does (its records in flight are
	// bounded by buffer.memory). With a fixed Rate it is 1.
	Concurrency int
	// Producers is the number of producer clients; default 1.
	Producers int
	// ConsumerGroups is the number of consumer groups, each reading every
	// record. 0 means none (produce only; e2e and the consume rule are then
	// empty) and is NOT defaulted: the flag's default is 1.
	ConsumerGroups int
	// ConsumersPerGroup; default 1.
	ConsumersPerGroup int
	// Acks is "0", "1" or "all" (Kafka: acks); idempotence is on only with
	// "all". Default "all".
	Acks string
	// LingerMs is the producer linger (Kafka: linger.ms); default 1.
	LingerMs int
	// BatchBytes is the maximum batch size (Kafka: batch.size); default
	// 131072.
	BatchBytes int
	// Compression is none, gzip, snappy, lz4 or zstd (Kafka:
	// compression.type); default none.
	Compression string
	// Encoding of the value: bytes, json, avro or protobuf; default bytes.
	Encoding string
	// Warmup is excluded from every result; zero means none (a plan row's
	// warmup_s: 0). The CLI flag defaults to 10s.
	Warmup time.Duration
	// Duration and DrainTimeout: defaults 30s and 30s.
	Duration     time.Duration
	DrainTimeout time.Duration
	// Seed makes payloads reproducible.
	Seed int64
	// Client is the Kafka client that runs the load: planner.ClientFranzGo
	// (default, in this process), planner.ClientJava (xp's Java load
	// generator on kafka-clients, in a JVM of its own; JavaClient) or
	// planner.ClientLibrdkafka (xp's load generator in C on librdkafka, in
	// a process of its own; RdkafkaClient).
	Client string
	// JavaClient is the Java client release Client java runs: its archive
	// (make java-client: out/dist/xp-java-client-VERSION.tgz, unpacked
	// once into CacheDir) or the unpacked directory.
	JavaClient string
	// RdkafkaClient is the librdkafka client release Client librdkafka
	// runs: its archive (make rdkafka-client:
	// out/dist/xp-rdkafka-client-VERSION.tgz, unpacked once into
	// CacheDir) or the unpacked directory.
	RdkafkaClient string
	// Java is the java binary of Client java; default "java" on PATH.
	Java string
	// JVMOpts are the Java client's JVM flags (before its class); default
	// DefaultJVMOpts, which a non-empty JVMOpts replaces whole. Each
	// attempt records them.
	JVMOpts []string
	// CacheDir is where a JavaClient or RdkafkaClient archive is unpacked; default
	// $XDG_CACHE_HOME/xp or ~/.cache/xp.
	CacheDir string
	// TLSVersion and TLSCipher narrow the clients' TLS to a row's
	// tls_version and tls_cipher (planner levels, "" or "default" leaves
	// it open); every connection is checked to have negotiated them
	// (Result.Connections).
	TLSVersion string
	TLSCipher  string
	// SASLMechanism replaces sasl.mechanism of a SASL client config with
	// a row's sasl_mechanism (scram-sha-512, scram-sha-256, plain, or
	// oauthbearer and gssapi with their properties in the config; ""
	// keeps the config's).
	SASLMechanism string
	// ConnectionChurn is the records each producer sends before it closes
	// its client and opens a new one (Kafka: a new KafkaProducer); 0, the
	// default, keeps one client for the whole run.
	ConnectionChurn int
	// OnPhase, when set, is called as each phase starts ("warmup",
	// "measure", "drain", "done") with the time it ends at the latest.
	OnPhase func(phase string, ends time.Time) `json:"-"`
}

// BufferBytes bounds the bytes of records a producer holds unacknowledged:
// Kafka's buffer.memory default (32 MiB). With Rate max and no Concurrency
// it is what bounds the records in flight.
const BufferBytes = 32 << 20

// InFlight is the records each producer keeps in flight with Rate max:
// Concurrency, or when that is 0 as many records of MessageSize as
// BufferBytes holds.
func (c Config) InFlight() int {
	if c.Concurrency > 0 {
		return c.Concurrency
	}
	return max(1, BufferBytes/max(1, c.MessageSize))
}

// Limits of Validate on the topic settings.
const (
	maxTopics          = 1000
	maxTotalPartitions = 100000
	maxTopicName       = 249
)

// DefaultJVMOpts are the Java client's JVM flags unless a run gives its
// own. A stop-the-world pause stops the pacer with every other thread, so
// each record due in it is sent late and its latency carries the pause;
// the consumer groups in the same JVM allocate a few KiB per record (a
// fetch response buffer, the records, their headers), which with the
// JVM's defaults means a young collection every second at 50k msg/s and
// fetch buffers over half a 1 MiB region allocated as humongous objects
// that start concurrent cycles. So: G1 named (the JVM picks the serial
// collector on a host it does not think a server), a fixed 2 GiB heap
// with 1 GiB of it young (a collection every few seconds at 50k msg/s,
// and none in most windows at 10k; a young pause costs what survives,
// not the young generation's size), and 16 MiB regions, so that only a
// buffer over 8 MiB is humongous.
var DefaultJVMOpts = []string{"-XX:+UseG1GC", "-Xms2g", "-Xmx2g", "-Xmn1g", "-XX:G1HeapRegionSize=16m"}

// ErrConfig marks invalid configuration (a usage error).
var ErrConfig = errors.New("invalid load generator configuration")

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Topics, 1)
	def(&c.Partitions, 6)
	def(&c.MessageSize, 1024)
	if c.Rate > 0 {
		def(&c.Concurrency, 1)
	}
	def(&c.Producers, 1)
	def(&c.ConsumersPerGroup, 1)
	def(&c.BatchBytes, 131072)
	if c.Acks == "" {
		c.Acks = "all"
	}
	if c.Compression == "" {
		c.Compression = "none"
	}
	if c.Encoding == "" {
		c.Encoding = EncodingBytes
	}
	if c.Duration == 0 {
		c.Duration = 30 * time.Second
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.Mode == "" {
		c.Mode = ModeOf(c.ClientConfig)
	}
	if c.Client == "" {
		c.Client = planner.ClientFranzGo
	}
	if c.Client == planner.ClientJava && len(c.JVMOpts) == 0 {
		c.JVMOpts = append([]string(nil), DefaultJVMOpts...)
	}
	if c.CacheDir == "" {
		c.CacheDir = defaultCacheDir()
	}
	return c
}

// defaultCacheDir is xp's cache directory: $XDG_CACHE_HOME/xp or
// ~/.cache/xp (as the targets' release caches).
func defaultCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "xp")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "xp")
	}
	return filepath.Join(os.TempDir(), "xp-cache")
}

// Validate reports the first invalid setting, naming its flag. Call it on
// a config with defaults applied.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case len(c.Bootstrap) == 0 && len(kafkaconf.Bootstrap(c.ClientConfig)) == 0:
		return bad("no bootstrap servers: give --bootstrap or bootstrap.servers in --client-config")
	case c.Topics < 1 || c.Topics > maxTopics:
		return bad("--topics %d: want 1..%d", c.Topics, maxTopics)
	case c.Partitions < 1 || c.Partitions > 10000:
		return bad("--partitions %d: want 1..10000", c.Partitions)
	case c.Topics*c.Partitions > maxTotalPartitions:
		return bad("--topics %d × --partitions %d = %d partitions: want at most %d in all", c.Topics, c.Partitions, c.Topics*c.Partitions, maxTotalPartitions)
	case c.Topics > 1 && len(c.Topic)+1+len(strconv.Itoa(c.Topics-1)) > maxTopicName:
		return bad("--topic %q with --topics %d: the names %s-0 .. %s-%d exceed Kafka's %d characters; use a shorter --topic", c.Topic, c.Topics, c.Topic, c.Topic, c.Topics-1, maxTopicName)
	case c.ReplicationFactor < 0 || c.ReplicationFactor > 9:
		return bad("--replication-factor %d: want 1..9 (0 = broker default)", c.ReplicationFactor)
	case c.MinInsyncReplicas < 0:
		return bad("--min-insync-replicas %d: want >= 1 (0 = broker default)", c.MinInsyncReplicas)
	case c.ReplicationFactor > 0 && c.MinInsyncReplicas > c.ReplicationFactor:
		return bad("--min-insync-replicas %d exceeds --replication-factor %d", c.MinInsyncReplicas, c.ReplicationFactor)
	case c.MessageSize < 16 || c.MessageSize > 1<<20:
		return bad("--message-size %d: want 16..1048576 bytes", c.MessageSize)
	case c.Rate < 0:
		return bad("--rate %d: want a positive rate or max", c.Rate)
	case c.Concurrency < 0 || c.Concurrency > 1_000_000:
		return bad("--concurrency %d: want 1..1000000 (0: as many as the producer buffer holds)", c.Concurrency)
	case c.Rate > 0 && c.Concurrency != 1:
		return bad("--concurrency applies to --rate max only (closed loop); a fixed --rate is open loop")
	case c.Producers < 1 || c.Producers > 1000:
		return bad("--producers %d: want 1..1000", c.Producers)
	case c.ConsumerGroups < 0 || c.ConsumerGroups > 100:
		return bad("--consumer-groups %d: want 0..100", c.ConsumerGroups)
	case c.ConsumersPerGroup < 1 || c.ConsumersPerGroup > 1000:
		return bad("--consumers-per-group %d: want 1..1000", c.ConsumersPerGroup)
	case c.Acks != "0" && c.Acks != "1" && c.Acks != "all":
		return bad("--acks %q: want 0, 1 or all", c.Acks)
	case c.LingerMs < 0 || c.LingerMs > 60000:
		return bad("--linger-ms %d: want 0..60000", c.LingerMs)
	case c.BatchBytes < 1024 || c.BatchBytes > 64<<20:
		return bad("--batch-bytes %d: want 1024..67108864", c.BatchBytes)
	case c.Warmup < 0:
		return bad("--warmup %v: want >= 0", c.Warmup)
	case c.Duration < time.Second:
		return bad("--duration %v: want at least 1s", c.Duration)
	case c.DrainTimeout < time.Second:
		return bad("--drain-timeout %v: want at least 1s", c.DrainTimeout)
	case planner.ClientsRefused[c.Client] != "":
		return bad("--client %s is refused: %s", c.Client, planner.ClientsRefused[c.Client])
	case c.Client != planner.ClientFranzGo && c.Client != planner.ClientJava && c.Client != planner.ClientLibrdkafka:
		return bad("--client %q: want %s, %s or %s", c.Client, planner.ClientFranzGo, planner.ClientJava, planner.ClientLibrdkafka)
	case c.Client == planner.ClientJava && c.JavaClient == "":
		return bad("--client java needs --java-client: the Java client release (make java-client writes out/dist/xp-java-client-VERSION.tgz)")
	}
	if c.Rate > 0 && float64(c.Rate)/float64(c.Producers) < 1 {
		return bad("--rate %d with --producers %d leaves a producer below 1 msg/s", c.Rate, c.Producers)
	}
	if _, err := compression(c.Compression); err != nil {
		return bad("%v", err)
	}
	if _, err := newEncoder(c.Encoding, c.MessageSize); err != nil {
		return bad("%v", err)
	}
	if _, err := kafkaconf.ClientOpts(c.ClientConfig); err != nil {
		return bad("--client-config: %v", err)
	}
	if err := c.validateRdkafka(); err != nil {
		return err
	}
	return c.validateSecurity()
}

// validateSecurity checks the row's security surface the load generator
// applies: TLS version and cipher levels, a SASL mechanism it speaks, a
// churn of zero or more records.
func (c Config) validateSecurity() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, a...))
	}
	switch c.TLSVersion {
	case "", planner.TLSDefault, planner.TLSVersion12, planner.TLSVersion13:
	default:
		return bad("--tls-version %q: want default, 1.2 or 1.3", c.TLSVersion)
	}
	switch c.TLSCipher {
	case "", planner.TLSDefault:
	case planner.TLSCipherAES128GCM, planner.TLSCipherAES256GCM, planner.TLSCipherChaCha20:
		if c.TLSVersion != planner.TLSVersion12 && c.TLSVersion != planner.TLSVersion13 {
			return bad("--tls-cipher %s needs --tls-version 1.2 or 1.3", c.TLSCipher)
		}
	default:
		return bad("--tls-cipher %q: want default, aes128-gcm, aes256-gcm or chacha20-poly1305", c.TLSCipher)
	}
	switch c.SASLMechanism {
	case "", planner.SASLScramSHA512, planner.SASLScramSHA256, planner.SASLPlain, planner.SASLOAuthBearer, planner.SASLGSSAPI:
	default:
		return bad("--sasl-mechanism %q: want scram-sha-512, scram-sha-256, plain, oauthbearer or gssapi", c.SASLMechanism)
	}
	if c.ConnectionChurn < 0 {
		return bad("--connection-churn %d: want 0 (one connection for the run) or the records per producer between reconnects", c.ConnectionChurn)
	}
	return nil
}

// ParseRate reads a --rate value: a positive integer or "max" (0).
func ParseRate(s string) (int64, error) {
	if strings.EqualFold(s, "max") {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("--rate %q: want a positive integer (msg/s) or max", s)
	}
	return n, nil
}

func compression(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// ModeOf names the security mode a client configuration selects:
// plaintext, tls, mtls (TLS with a client certificate), sasl_ssl or
// sasl_plaintext.
func ModeOf(props map[string]string) string {
	switch kafkaconf.Protocol(props) {
	case "ssl":
		if props[kafkaconf.SSLCertificate] != "" {
			return planner.SecurityMTLS
		}
		return planner.SecurityTLS
	case "sasl_ssl":
		return planner.SecuritySASLSSL
	case "sasl_plaintext":
		return "sasl_plaintext"
	}
	return planner.SecurityPlaintext
}
