package records

import (
	"encoding/binary"
	"hash/crc32"
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchInfo is what a RecordFunc may want to know about the batch it is in.
type BatchInfo struct {
	BaseOffset    int64
	BaseTimestamp int64
	Codec         Codec
}

// RecordFunc is called for every record of every data batch. It may change
// r (Value, Key, Headers, NumHeaders) and reports whether it did; slices it
// sets must stay valid until the next call. An error stops the rewrite.
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
	if cap(w.plain) > 4<<20 {
		w.plain = nil
	}
	if cap(w.recs) > 4<<20 {
		w.recs = nil
	}
	pool.Put(w)
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

func (w *Rewriter) rewriteBatch(dst, batch []byte, fn RecordFunc) ([]byte, error) {
	if binary.BigEndian.Uint32(batch[offCRC:]) != crc32.Checksum(batch[offAttributes:], castagnoli) {
		return dst, ErrCRC
	}
	attrs := binary.BigEndian.Uint16(batch[offAttributes:])
	if attrs&attrControl != 0 {
		return append(dst, batch...), nil
	}
	info := BatchInfo{
		BaseOffset:    int64(binary.BigEndian.Uint64(batch)),
		BaseTimestamp: int64(binary.BigEndian.Uint64(batch[27:])),
		Codec:         Codec(attrs & attrCodecMask),
	}
	count := int32(binary.BigEndian.Uint32(batch[offCount:]))
	if count < 0 {
		return dst, ErrCorrupt
	}
	body := batch[headerSize:]
	if info.Codec != None {
		var err error
		if w.plain, err = w.decompress(w.plain[:0], info.Codec, body); err != nil {
			return dst, err
		}
		body = w.plain
	}
	start := len(dst)
	dst = append(dst, batch[:headerSize]...)
	out := dst
	if info.Codec != None {
		out = w.recs[:0]
	}
	changed := false
	var r Record
	for range count {
		var err error
		if body, err = parseRecord(body, &r); err != nil {
			return dst[:start], err
		}
		c, err := fn(&info, &r)
		if err != nil {
			return dst[:start], err
		}
		changed = changed || c
		out = AppendRecord(out, &r)
	}
	if len(body) != 0 {
		return dst[:start], ErrCorrupt
	}
	if !changed {
		if info.Codec != None {
			w.recs = out
		}
		return append(dst[:start], batch...), nil
	}
	if info.Codec == None {
		dst = out
	} else {
		w.recs = out
		var err error
		if dst, err = w.compress(dst, info.Codec, out); err != nil {
			return dst[:start], err
		}
	}
	b := dst[start:]
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return dst, nil
}
