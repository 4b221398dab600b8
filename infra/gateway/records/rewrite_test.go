package records

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// castagnoli is hash/crc32's CRC-32C, an independent check of the batches
// the package checksums with crc32c.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var allCodecs = []Codec{None, Gzip, Snappy, LZ4, Zstd}

func kgoCodec(c Codec) kgo.CompressionCodec {
	switch c {
	case Gzip:
		return kgo.GzipCompression()
	case Snappy:
		return kgo.SnappyCompression()
	case LZ4:
		return kgo.Lz4Compression()
	case Zstd:
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// testRecords is a varied set: null and empty keys and values, headers
// with null values, distinct timestamps.
func testRecords(n int, seed uint64) []*kgo.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]*kgo.Record, n)
	for i := range out {
		r := &kgo.Record{Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		switch i % 5 {
		case 0:
		case 1:
			r.Key = []byte{}
		default:
			r.Key = fmt.Appendf(nil, "key-%d", i)
		}
		switch i % 7 {
		case 3:
		case 4:
			r.Value = []byte{}
		default:
			r.Value = make([]byte, rng.IntN(2000))
			for j := range r.Value {
				r.Value[j] = byte('a' + rng.IntN(8)) // compressible
			}
		}
		for h := range i % 4 {
			hv := []byte(fmt.Sprintf("hv-%d", h))
			if h == 2 {
				hv = nil
			}
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: fmt.Sprintf("h%d", h), Value: hv})
		}
		out[i] = r
	}
	return out
}

type cluster struct {
	addr string
	cl   *kgo.Client
}

func newCluster(t testing.TB, topics ...string) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	// Raw requests name topics, not topic ids: pin versions below Fetch v13.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &cluster{addr: c.ListenAddrs()[0], cl: cl}
}

func (c *cluster) produce(t testing.TB, topic string, codec Codec, recs []*kgo.Record) {
	t.Helper()
	p, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgoCodec(codec)), kgo.ProducerLinger(20*time.Millisecond),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, r := range recs {
		p.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// fetchRaw returns partition 0's record set from offset 0, as the broker
// sends it.
func (c *cluster) fetchRaw(t testing.TB, topic string) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.MaxBytes = 64 << 20
	req.MaxWaitMillis = 0
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 64 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: error code %d", p.ErrorCode)
	}
	return p.RecordBatches
}

// produceRaw produces each batch of set as its own request, as a broker
// wants it (one batch, base offset 0).
func (c *cluster) produceRaw(t testing.TB, topic string, set []byte) {
	t.Helper()
	for len(set) > 0 {
		l := 12 + int(binary.BigEndian.Uint32(set[offLength:]))
		b := bytes.Clone(set[:l])
		set = set[l:]
		binary.BigEndian.PutUint64(b, 0)
		c.produceBatch(t, topic, b)
	}
}

func (c *cluster) produceBatch(t testing.TB, topic string, set []byte) {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = set
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), c.cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce of rewritten batches: error code %d", code)
	}
}

// consume reads n records of topic with an ordinary franz-go consumer, so
// decompression and parsing are franz-go's, not ours.
func (c *cluster) consume(t testing.TB, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume %s after %d of %d: %v", topic, len(out), n, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func sameRecords(t *testing.T, got, want []*kgo.Record, value func([]byte) []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		wv := w.Value
		if value != nil {
			wv = value(w.Value)
		}
		if !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, wv) || (g.Value == nil) != (wv == nil) ||
			!g.Timestamp.Equal(w.Timestamp) || g.Offset != w.Offset ||
			!slices.EqualFunc(g.Headers, w.Headers, func(a, b kgo.RecordHeader) bool {
				return a.Key == b.Key && bytes.Equal(a.Value, b.Value) && (a.Value == nil) == (b.Value == nil)
			}) {
			t.Fatalf("record %d differs:\n got %+v\nwant %+v (value %q)", i, g, w, wv)
		}
	}
}

func bang(v []byte) []byte {
	if v == nil {
		return nil
	}
	return append(slices.Clip(v), '!')
}

// TestRoundTripThroughBroker rewrites franz-go-produced batches of every
// codec (value + "!", and a header added), produces the result to the
// broker, checks a franz-go consumer reads exactly the changed records,
// then undoes the change and checks the records are byte-identical to the
// originals: key, value, headers, timestamps, offsets.
func TestRoundTripThroughBroker(t *testing.T) {
	var topics []string
	for _, c := range allCodecs {
		topics = append(topics, "src-"+c.String(), "mid-"+c.String(), "back-"+c.String())
	}
	c := newCluster(t, topics...)
	const n = 300
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			c.produce(t, "src-"+codec.String(), codec, testRecords(n, uint64(codec)))
			want := c.consume(t, "src-"+codec.String(), n)
			raw := c.fetchRaw(t, "src-"+codec.String())
			// The client leaves a batch uncompressed when compressing
			// does not shrink it (a small first or last batch can be
			// one), so only most batches carry the codec.
			if got := batchCodecs(t, raw); len(got) < 2 || countCodec(got, codec) < 2 {
				t.Fatalf("source batches %v: want several %v batches", got, codec)
			}
			w := Get()
			defer Put(w)
			var scratch []byte
			mid, err := w.Rewrite(nil, raw, func(_ *BatchInfo, r *Record) (bool, error) {
				if r.Value != nil {
					scratch = append(append(scratch[:0], r.Value...), '!')
					r.Value = scratch
				}
				r.Headers = AppendHeader(r.Headers[:len(r.Headers):len(r.Headers)], "mark", []byte{1})
				r.NumHeaders++
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := batchCodecs(t, mid); !slices.Equal(got, batchCodecs(t, raw)) {
				t.Fatalf("codecs changed: %v", got)
			}
			c.produceRaw(t, "mid-"+codec.String(), mid)
			gotMid := c.consume(t, "mid-"+codec.String(), n)
			for _, r := range gotMid {
				if l := r.Headers[len(r.Headers)-1]; l.Key != "mark" {
					t.Fatalf("offset %d: last header %q, want mark", r.Offset, l.Key)
				}
				r.Headers = r.Headers[:len(r.Headers)-1]
			}
			sameRecords(t, gotMid, want, bang)

			back, err := w.Rewrite(nil, c.fetchRaw(t, "mid-"+codec.String()), func(_ *BatchInfo, r *Record) (bool, error) {
				k, _, start, ok := r.LastHeader()
				if !ok || string(k) != "mark" {
					return false, errors.New("mark header missing")
				}
				r.Headers, r.NumHeaders = r.Headers[:start], r.NumHeaders-1
				if r.Value != nil {
					r.Value = r.Value[:len(r.Value)-1]
				}
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			c.produceRaw(t, "back-"+codec.String(), back)
			sameRecords(t, c.consume(t, "back-"+codec.String(), n), want, nil)
		})
	}
}

func countCodec(codecs []Codec, c Codec) int {
	n := 0
	for _, x := range codecs {
		if x == c {
			n++
		}
	}
	return n
}

func batchCodecs(t *testing.T, set []byte) []Codec {
	t.Helper()
	var out []Codec
	for len(set) >= headerSize {
		l := binary.BigEndian.Uint32(set[offLength:])
		out = append(out, Codec(set[offAttributes+1]&attrCodecMask))
		set = set[12+l:]
	}
	return out
}

func buildSet(t testing.TB, codec Codec, recs []Record) []byte {
	t.Helper()
	b, err := BuildBatch(codec, 1_700_000_000_000, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleRecords() []Record {
	return []Record{
		{Key: []byte("k"), Value: []byte("v1"), Headers: AppendHeader(nil, "h", nil), NumHeaders: 1},
		{TimestampDelta: 5, OffsetDelta: 1, Value: bytes.Repeat([]byte("v"), 3000)},
		{TimestampDelta: -3, OffsetDelta: 2, Key: []byte{}},
	}
}

func TestRewriteCases(t *testing.T) {
	identity := func(*BatchInfo, *Record) (bool, error) { return false, nil }
	touch := func(*BatchInfo, *Record) (bool, error) { return true, nil }
	plain := buildSet(t, None, sampleRecords())
	control := bytes.Clone(plain)
	binary.BigEndian.PutUint16(control[offAttributes:], attrControl)
	binary.BigEndian.PutUint32(control[offCRC:], crc32.Checksum(control[offAttributes:], castagnoli))
	badCRC := bytes.Clone(plain)
	badCRC[len(badCRC)-1] ^= 1
	badCRCgzip := buildSet(t, Gzip, sampleRecords())
	badCRCgzip[offCRC] ^= 1
	oldMagic := bytes.Clone(plain)
	oldMagic[offMagic] = 1
	badCount := bytes.Clone(plain)
	binary.BigEndian.PutUint32(badCount[offCount:], 4)
	binary.BigEndian.PutUint32(badCount[offCRC:], crc32.Checksum(badCount[offAttributes:], castagnoli))
	for _, tc := range []struct {
		name    string
		set     []byte
		fn      RecordFunc
		want    []byte
		wantErr error
	}{
		{"untouched batch copied", plain, identity, plain, nil},
		{"touched uncompressed batch re-encodes to the same bytes", plain, touch, plain, nil},
		{"two batches", append(bytes.Clone(plain), plain...), touch, append(bytes.Clone(plain), plain...), nil},
		{"control batch passes", control, touch, control, nil},
		{"pre-v2 batch passes", oldMagic, touch, oldMagic, nil},
		{"truncated tail dropped", append(bytes.Clone(plain), plain[:70]...), touch, plain, ErrTruncated},
		{"short tail dropped", append(bytes.Clone(plain), 0, 0, 0), touch, plain, ErrTruncated},
		{"crc mismatch", badCRC, touch, nil, ErrCRC},
		{"crc mismatch reported before a callback error", badCRC, func(*BatchInfo, *Record) (bool, error) { return false, ErrTooLarge }, nil, ErrCRC},
		{"crc mismatch in a compressed batch", badCRCgzip, touch, nil, ErrCRC},
		{"record count past the data", badCount, touch, nil, ErrCorrupt},
		{"callback error", plain, func(*BatchInfo, *Record) (bool, error) { return false, ErrTooLarge }, nil, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Get()
			defer Put(w)
			got, err := w.Rewrite(nil, tc.set, tc.fn)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.want != nil && !bytes.Equal(got, tc.want) {
				t.Fatalf("output differs (%d vs %d bytes)", len(got), len(tc.want))
			}
		})
	}
	if !HasOldMagic(oldMagic) || HasOldMagic(plain) {
		t.Fatal("HasOldMagic wrong")
	}
}

// TestCodecsRoundTrip checks each codec through our own compress and
// decompress with values changed, including snappy in xerial framing.
func TestCodecsRoundTrip(t *testing.T) {
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			set := buildSet(t, codec, sampleRecords())
			w := Get()
			defer Put(w)
			var seen [][]byte
			out, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
				r.Value = bang(r.Value)
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Rewrite(nil, out, func(_ *BatchInfo, r *Record) (bool, error) {
				seen = append(seen, bytes.Clone(r.Value))
				return false, nil
			}); err != nil {
				t.Fatal(err)
			}
			for i, r := range sampleRecords() {
				if !bytes.Equal(seen[i], bang(r.Value)) {
					t.Fatalf("record %d: %q", i, seen[i])
				}
			}
		})
	}
	t.Run("xerial snappy keeps its framing", func(t *testing.T) {
		var c codecs
		c.max = DefaultMaxBatch
		body := bytes.Repeat([]byte("abcdefgh"), 10000) // > one xerial chunk
		c.xerial = true
		framed, err := c.compress(nil, Snappy, body)
		if err != nil {
			t.Fatal(err)
		}
		c.xerial = false
		plain, err := c.decompress(nil, Snappy, framed)
		if err != nil || !bytes.Equal(plain, body) || !c.xerial {
			t.Fatalf("xerial round trip: err %v, equal %v, detected %v", err, bytes.Equal(plain, body), c.xerial)
		}
		again, _ := c.compress(nil, Snappy, plain)
		if !bytes.HasPrefix(again, xerialMagic) {
			t.Fatal("recompressed without xerial framing")
		}
	})
	t.Run("decompression bound", func(t *testing.T) {
		var c codecs
		c.max = 1000
		for _, codec := range []Codec{Gzip, Snappy, LZ4, Zstd} {
			z, _ := (&codecs{max: DefaultMaxBatch}).compress(nil, codec, make([]byte, 100_000))
			if _, err := c.decompress(nil, codec, z); err == nil {
				t.Fatalf("%v: 100 kB decompressed under a 1000-byte bound", codec)
			}
		}
	})
}

func FuzzRewrite(f *testing.F) {
	for _, codec := range allCodecs {
		f.Add(buildSet(f, codec, sampleRecords()))
	}
	f.Fuzz(func(t *testing.T, set []byte) {
		w := &Rewriter{codecs: codecs{max: 1 << 20}}
		out, err := w.Rewrite(nil, set, func(_ *BatchInfo, r *Record) (bool, error) {
			r.Value = bang(r.Value)
			return true, nil
		})
		if err != nil {
			return
		}
		// Whatever we accept and emit must parse again.
		if _, err := w.Rewrite(nil, out, func(*BatchInfo, *Record) (bool, error) { return false, nil }); err != nil {
			t.Fatalf("rewritten set does not parse: %v", err)
		}
	})
}

// TestBuildBatchReadByFranz: batches we build (and compress) are read by
// franz-go, whose decoders are not ours.
func TestBuildBatchReadByFranz(t *testing.T) {
	var topics []string
	for _, c := range allCodecs {
		topics = append(topics, "built-"+c.String())
	}
	c := newCluster(t, topics...)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			recs := sampleRecords()
			c.produceBatch(t, "built-"+codec.String(), buildSet(t, codec, recs))
			got := c.consume(t, "built-"+codec.String(), len(recs))
			for i, r := range recs {
				g := got[i]
				if !bytes.Equal(g.Value, r.Value) || !bytes.Equal(g.Key, r.Key) || (g.Key == nil) != (r.Key == nil) ||
					g.Timestamp.UnixMilli() != 1_700_000_000_000+r.TimestampDelta || len(g.Headers) != r.NumHeaders {
					t.Fatalf("record %d: got %+v", i, g)
				}
			}
		})
	}
}

// TestRewriteLargeBatchCRC covers the fused CRC-32C over batches many
// crcSpan long: a rewritten batch carries the CRC of its bytes, and one
// flipped bit anywhere in the records (first, at and around span
// boundaries, last) is found.
func TestRewriteLargeBatchCRC(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var recs []Record
	for i := range 300 {
		v := make([]byte, 500+r.IntN(3000))
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		recs = append(recs, Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Value: v})
	}
	set := buildSet(t, None, recs)
	grow := func(_ *BatchInfo, rec *Record) (bool, error) {
		rec.Value = append(slices.Clone(rec.Value), 'x')
		return true, nil
	}
	w := Get()
	defer Put(w)
	got, err := w.Rewrite(nil, set, grow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(set)+len(recs) {
		t.Fatalf("rewritten batch of %d bytes, want %d", len(got), len(set)+len(recs))
	}
	if crc := binary.BigEndian.Uint32(got[offCRC:]); crc != crc32.Checksum(got[offAttributes:], castagnoli) {
		t.Fatalf("rewritten batch CRC %08x does not match its bytes", crc)
	}
	for _, at := range []int{headerSize, headerSize + 1, headerSize + crcSpan - 1, headerSize + crcSpan, headerSize + crcSpan + 1,
		len(set) / 2, len(set) - 2*crcSpan, len(set) - 1} {
		bad := bytes.Clone(set)
		bad[at] ^= 0x10
		// A flip that breaks parsing is reported as the CRC mismatch too.
		if _, err := w.Rewrite(nil, bad, grow); !errors.Is(err, ErrCRC) {
			t.Errorf("bit flipped at %d of %d: err %v, want ErrCRC", at, len(set), err)
		}
	}
}
