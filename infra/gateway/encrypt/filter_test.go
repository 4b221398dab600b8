package encrypt

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/records"
	"github.com/xp-bench/xp/planner"
)

// makeBatch encodes values as one uncompressed record batch v2 with
// kmsg's record encoding (not ours) and a Castagnoli CRC.
func makeBatch(values [][]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Key: []byte("key"), Value: v}
		body := r.AppendTo(nil)
		// kmsg's Record.AppendTo writes Length as given; fix it up.
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: 1_750_000_000_000,
		MaxTimestamp: 1_750_000_000_000 + int64(len(values)), ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

type benchCase struct {
	name, topic, enc string
	codec            records.Codec
}

var benchCases = []benchCase{
	{"encrypt/1KiB", "v-bench", "bytes", records.None},
	{"field_encrypt/json", "j-bench", EncodingJSON, records.None},
	{"field_encrypt/avro", "a-bench", EncodingAvro, records.None},
	{"field_encrypt/protobuf", "p-bench", EncodingProtobuf, records.None},
	// The ssn format-preserving (cipher fpe) instead of in an envelope.
	{"field_encrypt/json_fpe", "fbj-bench", EncodingJSON, records.None},
	{"field_encrypt/avro_fpe", "fba-bench", EncodingAvro, records.None},
	{"field_encrypt/protobuf_fpe", "fbp-bench", EncodingProtobuf, records.None},
	// Compressed batches must be decompressed and recompressed both ways.
	{"field_encrypt/json+lz4", "j-bench", EncodingJSON, records.LZ4},
	{"field_encrypt/json+zstd", "j-bench", EncodingJSON, records.Zstd},
}

const benchBatch = 100

// roundTripper drives the filter as the gateway does: a produce request
// of one batch, then the fetch response carrying what was produced.
type roundTripper struct {
	f     *Filter
	batch []byte
	req   kmsg.ProduceRequest
	resp  kmsg.FetchResponse
	// atRest keeps a copy of the encrypted batch in rest (the fetch
	// decrypts over it).
	atRest   bool
	rest     []byte
	payloads []payload
	values   [][]byte
	// The produce and fetch scratch buffers, as a gateway connection's
	// two directions hold them; each is released when the next round
	// trip begins, so run's result stays valid until then.
	pctx, fctx         context.Context
	prelease, frelease func()
}

func newRoundTripper(t testing.TB, topic, enc string) *roundTripper {
	return newRoundTripperCodec(t, topic, enc, records.None)
}

func newRoundTripperCodec(t testing.TB, topic, enc string, codec records.Codec) *roundTripper {
	rules := append(testRules(),
		TopicRule{Pattern: "fbj-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingJSON},
		TopicRule{Pattern: "fba-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingAvro, AvroSchema: loadgenAvro},
		TopicRule{Pattern: "fbp-*", Mode: planner.SecurityFieldEncrypt, Cipher: CipherFPE, Encoding: EncodingProtobuf, ProtobufDescriptorSet: loadgenProto})
	f, err := New(Config{Vault: newVault(t, "k1"), Topics: rules}, ".")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rt := &roundTripper{f: f}
	rt.pctx, rt.prelease = gateway.WithScratch(context.Background())
	rt.fctx, rt.frelease = gateway.WithScratch(context.Background())
	for range benchBatch {
		pl := newPayload(rng, 1024)
		rt.payloads = append(rt.payloads, pl)
		rt.values = append(rt.values, pl.encode(enc, rng))
	}
	rt.batch = makeBatch(rt.values)
	if codec != records.None {
		recs := make([]records.Record, len(rt.values))
		for i, v := range rt.values {
			recs[i] = records.Record{TimestampDelta: int64(i), OffsetDelta: int32(i), Key: []byte("key"), Value: v}
		}
		var err error
		if rt.batch, err = records.BuildBatch(codec, 1_750_000_000_000, recs); err != nil {
			t.Fatal(err)
		}
	}
	rt.req.Topics = []kmsg.ProduceRequestTopic{{Topic: topic, Partitions: []kmsg.ProduceRequestTopicPartition{{}}}}
	rt.resp.Topics = []kmsg.FetchResponseTopic{{Topic: topic, Partitions: []kmsg.FetchResponseTopicPartition{{}}}}
	return rt
}

func (rt *roundTripper) run(t testing.TB) []byte {
	rt.prelease()
	rt.frelease()
	rt.req.Topics[0].Partitions[0].Records = rt.batch
	if err := rt.f.ProduceRequest(rt.pctx, &rt.req); err != nil {
		t.Fatal(err)
	}
	p := &rt.resp.Topics[0].Partitions[0]
	p.ErrorCode, p.RecordBatches = 0, rt.req.Topics[0].Partitions[0].Records
	if rt.atRest {
		rt.rest = bytes.Clone(p.RecordBatches)
	}
	if err := rt.f.FetchResponse(rt.fctx, nil, &rt.resp); err != nil || p.ErrorCode != 0 {
		t.Fatalf("fetch: %v, code %d", err, p.ErrorCode)
	}
	return p.RecordBatches
}

func TestFilterRoundTripInProcess(t *testing.T) {
	for _, c := range benchCases {
		t.Run(c.name, func(t *testing.T) {
			rt := newRoundTripperCodec(t, c.topic, c.enc, c.codec)
			rt.atRest = true
			out := rt.run(t)
			if c.codec == records.None && !bytes.Equal(out, rt.batch) {
				t.Fatal("an uncompressed batch did not come back byte-identical")
			}
			got, rest := valuesOf(t, out), valuesOf(t, rt.rest)
			for i, pl := range rt.payloads {
				if !bytes.Equal(got[i], rt.values[i]) {
					t.Fatalf("record %d not restored", i)
				}
				secret := []byte(pl.ssn)
				if c.enc == "bytes" {
					secret = rt.values[i]
				}
				if bytes.Contains(rest[i], secret) {
					t.Fatalf("record %d: plaintext %.40q at rest", i, secret)
				}
			}
		})
	}
}

func valuesOf(t testing.TB, set []byte) [][]byte {
	t.Helper()
	var out [][]byte
	w := records.Get()
	defer records.Put(w)
	if _, err := w.Rewrite(nil, set, func(_ *records.BatchInfo, r *records.Record) (bool, error) {
		out = append(out, bytes.Clone(r.Value))
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProducerHeaderNamedLikeTheMarker: a producer's own last header named
// xp.enc survives the round trip on every kind of record, encrypted or not.
func TestProducerHeaderNamedLikeTheMarker(t *testing.T) {
	own := records.AppendHeader(nil, HeaderKey, []byte("1:ssn"))
	recs := []records.Record{
		{Value: []byte(`{"ssn":"123-45-6789"}`), Headers: own, NumHeaders: 1},
		{OffsetDelta: 1, Value: []byte(`{"name":"no ssn"}`), Headers: own, NumHeaders: 1},
		{OffsetDelta: 2, Key: []byte("k"), Headers: own, NumHeaders: 1}, // tombstone
		{OffsetDelta: 3, Value: []byte(`{"name":"plain, no header"}`)},
	}
	batch, err := records.BuildBatch(records.None, 1_750_000_000_000, recs)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRoundTripper(t, "j-own", EncodingJSON)
	rt.batch, rt.atRest = batch, true
	if out := rt.run(t); !bytes.Equal(out, batch) {
		t.Fatal("records with a producer header named xp.enc did not come back byte-identical")
	}
	var markers []string
	w := records.Get()
	defer records.Put(w)
	if _, err := w.Rewrite(nil, rt.rest, func(_ *records.BatchInfo, r *records.Record) (bool, error) {
		k, v, _, _ := r.LastHeader()
		markers = append(markers, string(k)+"="+string(v))
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"xp.enc=1:ssn", "xp.enc=0", "xp.enc=0", "="}
	if strings.Join(markers, " ") != strings.Join(want, " ") {
		t.Fatalf("markers at rest %v, want %v", markers, want)
	}
}
