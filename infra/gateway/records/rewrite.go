package records

import (
	"encoding/binary"
	"github.com/xp-bench/xp/internal/crc32c"
	"sync"
)

// Batch header layout (record batch v2).
const (
	offLength     = 8
	offMagic      = 16
	offCRC        = 17
	offAttributes = 21
	offCount      = 57
	headerSize    = 61

	attrCodecMask = 0x07
	attrControl   = 0x20
)

// BatchInfo is what a RecordFunc may want to know about the batch it is in.
type BatchInfo struct {
	BaseOffset    int64
	BaseTimestamp int64
	Codec         Codec
}

// RecordFunc is called for every record of every data batch. It may change
// r (Value, Key, Headers, NumHeaders, or Fill to have the new value written
// straight into the batch) and reports whether it did; slices it sets must
// stay valid until the next call. An error, its own or its Fill's, stops
// the rewrite.
type RecordFunc func(b *BatchInfo, r *Record) (changed bool, err error)

// Rewriter rebuilds record sets. It keeps its buffers and compressors
// between calls, so it is cheap to reuse and not safe for concurrent use;
// Get one from the pool per request.
type Rewriter struct {
	codecs
	plain []byte
	recs  []byte
}

// DefaultMaxBatch bounds the decompressed size of one batch.
const DefaultMaxBatch = 64 << 20

var pool = sync.Pool{New: func() any { return NewRewriter(DefaultMaxBatch) }}

// NewRewriter returns a Rewriter that refuses batches decompressing past
// maxBatch bytes (DefaultMaxBatch when ≤ 0).
func NewRewriter(maxBatch int) *Rewriter {
	if maxBatch <= 0 {
		maxBatch = DefaultMaxBatch
	}
	return &Rewriter{codecs: codecs{max: maxBatch}}
}

// Get takes a Rewriter from a shared pool; Put returns it.
func Get() *Rewriter { return pool.Get().(*Rewriter) }

// Put returns w to the pool.
func Put(w *Rewriter) {
	w.Trim()
	pool.Put(w)
}

// Trim drops buffers grown past 4 MiB, so that a Rewriter kept idle does
// not pin the memory of one unusually large batch.
func (w *Rewriter) Trim() {
	if cap(w.plain) > 4<<20 {
		w.plain = nil
	}
	if cap(w.recs) > 4<<20 {
		w.recs = nil
	}
}

// Rewrite appends to dst the record set set (one partition's records: a
// sequence of batches) with every record of every v2 data batch passed
// through fn. Batches in which fn changed nothing, control batches and
// pre-v2 batches are copied unchanged. A partial batch at the end is
// dropped and reported as ErrTruncated together with the complete batches
// (fetch responses may end in one; a produce request must not). Any other
// error means dst holds nothing usable.
func (w *Rewriter) Rewrite(dst, set []byte, fn RecordFunc) ([]byte, error) {
	for len(set) > 0 {
		if len(set) < headerSize {
			return dst, ErrTruncated
		}
		blen := int64(int32(binary.BigEndian.Uint32(set[offLength:])))
		if blen < headerSize-12 {
			return dst, ErrCorrupt
		}
		if int64(len(set)-12) < blen {
			return dst, ErrTruncated
		}
		batch := set[:12+blen]
		set = set[12+blen:]
		if batch[offMagic] != 2 {
			dst = append(dst, batch...)
			continue
		}
		var err error
		if dst, err = w.rewriteBatch(dst, batch, fn); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// CountRecords sums the record counts of the complete batches of set.
func CountRecords(set []byte) int {
	n := 0
	for len(set) >= headerSize {
		blen := int64(int32(binary.BigEndian.Uint32(set[offLength:])))
		if blen < headerSize-12 || int64(len(set)-12) < blen {
			break
		}
		n += int(max(int32(binary.BigEndian.Uint32(set[offCount:])), 0))
		set = set[12+blen:]
	}
	return n
}

// HasOldMagic reports whether any complete batch of set is pre-v2.
func HasOldMagic(set []byte) bool {
	for len(set) >= headerSize {
		blen := int64(int32(binary.BigEndian.Uint32(set[offLength:])))
		if blen < headerSize-12 || int64(len(set)-12) < blen {
			return false
		}
		if set[offMagic] != 2 {
			return true
		}
		set = set[12+blen:]
	}
	return false
}

// rewriteBatch appends batch rewritten to dst: an uncompressed batch is
// built in dst record by record; a compressed one has its records built in
// w.recs and compressed into dst.
func (w *Rewriter) rewriteBatch(dst, batch []byte, fn RecordFunc) ([]byte, error) {
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	codec := Codec(attrs & attrCodecMask)
	// An uncompressed data batch has its CRC-32C checked and its new one
	// computed record by record, while each record is in cache anyway
	// (fused), instead of in two more passes over batches of a megabyte
	// that a cache no longer holds; the check still comes before any
	// output is handed back.
	fused := codec == None && attrs&attrControl == 0
	wantCRC := binary.BigEndian.Uint32(batch[offCRC:])
	if !fused && wantCRC != crc32c.Checksum(batch[offAttributes:]) {
		return dst, ErrCRC
	}
	if attrs&attrControl != 0 {
		return append(dst, batch...), nil
	}
	// fail reports err, or ErrCRC if the batch is corrupt (what an upfront
	// check would have found first).
	fail := func(err error) ([]byte, error) {
		if fused && wantCRC != crc32c.Checksum(batch[offAttributes:]) {
			return dst, ErrCRC
		}
		return dst, err
	}
	info := BatchInfo{
		BaseOffset:    int64(binary.BigEndian.Uint64(batch)),
		BaseTimestamp: int64(binary.BigEndian.Uint64(batch[27:])),
		Codec:         codec,
	}
	count := int32(binary.BigEndian.Uint32(batch[offCount:]))
	if count < 0 {
		return fail(ErrCorrupt)
	}
	body := batch[headerSize:]
	if info.Codec != None {
		var err error
		if w.plain, err = w.decompress(w.plain[:0], info.Codec, body); err != nil {
			return dst, err
		}
		body = w.plain
	}
	nb := append(dst, batch[:headerSize]...)
	out := nb
	if info.Codec != None {
		out = w.recs[:0]
	}
	// The header bytes under the CRC are the same in both batches. The
	// fused CRCs take the records a span of crcSpan bytes at a time, so
	// each call is long enough to run at the kernel's full speed while
	// its bytes are still in cache.
	inCRC := crc32c.Update(0, batch[offAttributes:headerSize])
	outCRC := inCRC
	inSpan, outSpan := body, len(out)
	changed := false
	var r Record
	for range count {
		var err error
		if body, err = parseRecord(body, &r); err != nil {
			return fail(err)
		}
		if n := len(inSpan) - len(body); fused && n >= crcSpan {
			inCRC, inSpan = crc32c.Update(inCRC, inSpan[:n]), body
		}
		c, err := fn(&info, &r)
		if err != nil {
			return fail(err)
		}
		changed = changed || c
		if r.Fill == nil {
			out = AppendRecord(out, &r)
		} else if out, err = appendFilled(out, &r); err != nil {
			return fail(err)
		}
		if fused && len(out)-outSpan >= crcSpan {
			outCRC, outSpan = crc32c.Update(outCRC, out[outSpan:]), len(out)
		}
	}
	if len(body) != 0 {
		return fail(ErrCorrupt)
	}
	if fused {
		inCRC = crc32c.Update(inCRC, inSpan[:len(inSpan)-len(body)])
		outCRC = crc32c.Update(outCRC, out[outSpan:])
	}
	if fused && inCRC != wantCRC {
		return dst, ErrCRC
	}
	if !changed {
		if info.Codec != None {
			w.recs = out
		}
		return append(dst, batch...), nil
	}
	return w.seal(dst, nb, out, info.Codec, outCRC)
}

// seal finishes a rewritten batch after dst, its header nb[len(dst):]:
// uncompressed, its records follow the header in out (which extends nb)
// and crc is their CRC; compressed, out holds the records, compressed
// after the header.
func (w *Rewriter) seal(dst, nb, out []byte, codec Codec, crc uint32) ([]byte, error) {
	start := len(dst)
	if codec == None {
		finishBatch(out[start:], crc)
		return out, nil
	}
	w.recs = out
	nb, err := w.compress(nb, codec, out)
	if err != nil {
		return dst, err
	}
	finishBatch(nb[start:], crc32c.Checksum(nb[start+offAttributes:]))
	return nb, nil
}

// crcSpan is how many bytes of records the fused CRC-32C takes per call:
// about sixteen 1 KiB records, which a level-1 or level-2 cache still
// holds, where a call per record would spend a third of its time starting
// and finishing the fold.
const crcSpan = 16 << 10

// finishBatch sets the length and CRC-32C of a rebuilt batch.
func finishBatch(nb []byte, crc uint32) {
	binary.BigEndian.PutUint32(nb[offLength:], uint32(len(nb)-12))
	binary.BigEndian.PutUint32(nb[offCRC:], crc)
}

// BuildBatch encodes recs as one record batch v2 compressed with codec
// (base offset 0, no producer id), for tests and benchmarks that need
// batches without a client.
func BuildBatch(codec Codec, baseTimestamp int64, recs []Record) ([]byte, error) {
	var body []byte
	for i := range recs {
		body = AppendRecord(body, &recs[i])
	}
	b := make([]byte, headerSize, headerSize+len(body))
	b[offMagic] = 2
	binary.BigEndian.PutUint32(b[12:], 0xffffffff) // partition leader epoch -1
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(codec))
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(baseTimestamp))
	maxTS := baseTimestamp
	for _, r := range recs {
		maxTS = max(maxTS, baseTimestamp+r.TimestampDelta)
	}
	binary.BigEndian.PutUint64(b[35:], uint64(maxTS))
	binary.BigEndian.PutUint64(b[43:], 0xffffffffffffffff) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xffff)             // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xffffffff)         // base sequence -1
	binary.BigEndian.PutUint32(b[offCount:], uint32(len(recs)))
	if codec == None {
		b = append(b, body...)
	} else {
		c := codecs{max: DefaultMaxBatch}
		var err error
		if b, err = c.compress(b, codec, body); err != nil {
			return nil, err
		}
	}
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32c.Checksum(b[offAttributes:]))
	return b, nil
}
