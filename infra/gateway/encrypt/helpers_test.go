package encrypt

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/planner"
)

// The load generator's shipped schemas.
const (
	loadgenAvro  = "../../../runner/loadgen/schema/record.avsc"
	loadgenProto = "../../../runner/loadgen/schema/record.pb"
)

// encodingAvroConfluent is Avro with Confluent framing (schema id 1).
const encodingAvroConfluent = "avro-confluent"

// encodingBytesKH is random bytes on a topic that also encrypts keys and
// header values.
const encodingBytesKH = "bytes+key+headers"

var encodings = []string{"bytes", encodingBytesKH, EncodingJSON, EncodingAvro, encodingAvroConfluent, EncodingProtobuf}

var codecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// payload is the load generator's record {id, status, ssn, notes} of
// about size bytes in an encoding ("bytes": random bytes).
type payload struct {
	id, status, ssn, notes string
}

func newPayload(rng *rand.Rand, size int) payload {
	const hex = "0123456789abcdef"
	id := make([]byte, 36)
	for i := range id {
		id[i] = hex[rng.IntN(16)]
	}
	id[8], id[13], id[18], id[23] = '-', '-', '-', '-'
	ssn := fmt.Sprintf("%03d-%02d-%04d", rng.IntN(1000), rng.IntN(100), rng.IntN(10000))
	notes := make([]byte, max(size-100, 1))
	for i := range notes {
		notes[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[rng.IntN(36)]
	}
	return payload{string(id), []string{"ACTIVE", "CLOSED", "FROZEN", "REVIEW"}[rng.IntN(4)], ssn, string(notes)}
}

func (p payload) encode(encoding string, rng *rand.Rand) []byte {
	switch encoding {
	case EncodingJSON:
		return fmt.Appendf(nil, `{"id":%q,"status":%q,"ssn":%q,"notes":%q}`, p.id, p.status, p.ssn, p.notes)
	case EncodingAvro, encodingAvroConfluent:
		var b []byte
		if encoding == encodingAvroConfluent {
			b = []byte{0, 0, 0, 0, 1}
		}
		for _, s := range []string{p.id, p.status, p.ssn, p.notes} {
			b = binary.AppendVarint(b, int64(len(s)))
			b = append(b, s...)
		}
		return b
	case EncodingProtobuf:
		var b []byte
		for i, s := range []string{p.id, p.status, p.ssn, p.notes} {
			b = protowire.AppendTag(b, protowire.Number(i+1), protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
		return b
	}
	b := make([]byte, 100+len(p.notes))
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// testRecords are n records of one encoding with varied keys, headers and
// timestamps; every 9th value is null (a tombstone), except for kcat runs.
func testRecords(encoding string, n int, seed uint64, tombstones bool) ([]*kgo.Record, []payload) {
	rng := rand.New(rand.NewPCG(seed, 7))
	base := time.UnixMilli(1_750_000_000_000)
	recs := make([]*kgo.Record, n)
	pls := make([]payload, n)
	for i := range recs {
		pls[i] = newPayload(rng, 1024)
		r := &kgo.Record{Timestamp: base.Add(time.Duration(i) * time.Millisecond), Value: pls[i].encode(encoding, rng)}
		if i%4 != 0 {
			r.Key = fmt.Appendf(nil, "key-%d", i)
		}
		for h := range i % 3 {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d", h), Value: fmt.Appendf(nil, "v%d", i)})
		}
		if tombstones && i%9 == 5 {
			r.Value = nil
		}
		recs[i] = r
	}
	return recs, pls
}

// env is a kfake cluster with an encrypting gateway in front of it.
type env struct {
	kf     *kfake.Cluster
	gw     *gateway.Gateway
	filter *Filter
	vault  string
}

func newVault(t testing.TB, ids ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kek.keys")
	for _, id := range ids {
		if err := envelope.AddKey(p, id); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// testRules: v-* whole values, j-*/a-*/p-* the ssn field of JSON, Avro
// (the load generator's schema, unframed) and Protobuf (its descriptor
// set); everything else untouched.
func testRules() []TopicRule {
	return []TopicRule{
		{Pattern: "v-*", Mode: planner.SecurityEncrypt},
		{Pattern: "j-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingJSON, Fields: []string{"ssn"}},
		{Pattern: "a-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingAvro, AvroSchema: loadgenAvro},
		{Pattern: "p-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingProtobuf, ProtobufDescriptorSet: loadgenProto},
		{Pattern: "c-*", Mode: planner.SecurityFieldEncrypt, Encoding: EncodingAvro, AvroSchemas: map[uint32]string{1: loadgenAvro}},
		{Pattern: "kh-*", Mode: planner.SecurityEncrypt, EncryptKey: true, EncryptHeaders: true},
	}
}

func topicPrefix(encoding string) string {
	return map[string]string{"bytes": "v-", EncodingJSON: "j-", EncodingAvro: "a-", encodingAvroConfluent: "c-", EncodingProtobuf: "p-", encodingBytesKH: "kh-"}[encoding]
}

func startKfake(t testing.TB, topics ...string) *kfake.Cluster {
	t.Helper()
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics...), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kf.Close)
	return kf
}

func startGateway(t testing.TB, kf *kfake.Cluster, cfg Config, opts ...Option) *env {
	t.Helper()
	f, err := New(cfg, ".", append([]Option{WithLogger(testLogger(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	gcfg := &gateway.Config{
		Listen:   gateway.Listen{Host: "127.0.0.1", BootstrapPort: &zero, NodePortBase: &zero},
		Upstream: gateway.Upstream{Bootstrap: kf.ListenAddrs()},
		Metrics:  gateway.Metrics{Listen: "off"},
		Filters:  []gateway.RecordFilter{f},
	}
	g, err := gateway.Start(context.Background(), gcfg, gateway.WithLogger(testLogger(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return &env{kf: kf, gw: g, filter: f, vault: cfg.Vault}
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func produce(t testing.TB, bootstrap string, topic string, codec kgo.CompressionCodec, recs []*kgo.Record) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(10*time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordRetries(2),
		kgo.UnknownTopicRetries(2), kgo.ProduceRequestTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

// consume reads n records of topic from bootstrap (both partitions),
// failing on any fetch error; records come back sorted by partition and
// offset.
func consume(t testing.TB, bootstrap, topic string, n int) []*kgo.Record {
	t.Helper()
	got, err := tryConsume(bootstrap, topic, n, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func tryConsume(bootstrap, topic string, n int, timeout time.Duration) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			return out, err
		}
		out = append(out, fs.Records()...)
	}
	sortRecords(out)
	return out, nil
}

func sortRecords(rs []*kgo.Record) {
	slices.SortFunc(rs, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
