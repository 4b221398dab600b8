// Package records parses and rebuilds Kafka record batches (magic v2):
// records are read in place, changed by a callback, re-encoded, the batch
// recompressed with its own codec (gzip, snappy, lz4, zstd) and its lengths
// and CRC-32C recomputed. Everything else in a batch (offsets, timestamps,
// producer id, epoch and sequence, attributes) is copied as it was.
package records

import (
	"encoding/binary"
	"errors"
)

// Errors callers branch on.
var (
	// ErrCorrupt means a batch or record does not parse.
	ErrCorrupt = errors.New("records: corrupt record batch")
	// ErrCRC means a batch's CRC-32C does not match its bytes.
	ErrCRC = errors.New("records: batch CRC mismatch")
	// ErrTruncated means the record set ends in a partial batch (normal at
	// the end of a fetch response, an error in a produce request).
	ErrTruncated = errors.New("records: truncated record batch")
	// ErrOldMagic means a batch is in a pre-v2 message format.
	ErrOldMagic = errors.New("records: message format before v2")
	// ErrTooLarge means a batch decompresses past the configured bound.
	ErrTooLarge = errors.New("records: decompressed batch too large")
)

// Record is one record of a batch. Key, Value and Headers alias the batch
// (or the caller's buffers after a change); a nil Key or Value is null.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte
	Value          []byte
	// Headers is the encoded header list without its count; NumHeaders is
	// the count.
	Headers    []byte
	NumHeaders int

	// Fill, when a RecordFunc sets it, writes the record's new value
	// straight into the rebuilt batch instead of Value being built in a
	// buffer of its own and copied there: it appends the value to dst and
	// returns the result, and may still change Headers and NumHeaders
	// (written after the value). FillHint is the value's expected length;
	// it only has to be close (a length prefix of another size costs a
	// move of the value). Rewrite clears Fill for every record it parses.
	Fill     func(dst []byte) ([]byte, error)
	FillHint int
}

// parseRecord reads one length-prefixed record from b and returns the rest.
func parseRecord(b []byte, r *Record) ([]byte, error) {
	length, n := varint(b)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return nil, ErrCorrupt
	}
	rest := b[n+int(length):]
	b = b[n : n+int(length)]
	if len(b) < 1 {
		return nil, ErrCorrupt
	}
	r.Attributes = int8(b[0])
	r.Fill = nil
	b = b[1:]
	if r.TimestampDelta, n = varint(b); n <= 0 {
		return nil, ErrCorrupt
	}
	b = b[n:]
	od, n := varint(b)
	if n <= 0 || od != int64(int32(od)) {
		return nil, ErrCorrupt
	}
	r.OffsetDelta = int32(od)
	b = b[n:]
	var err error
	if r.Key, b, err = nullableBytes(b); err != nil {
		return nil, err
	}
	if r.Value, b, err = nullableBytes(b); err != nil {
		return nil, err
	}
	count, n := varint(b)
	if n <= 0 || count < 0 || count > int64(len(b)) {
		return nil, ErrCorrupt
	}
	b = b[n:]
	r.Headers, r.NumHeaders = b, int(count)
	for range count {
		var k []byte
		if k, b, err = nullableBytes(b); err != nil || k == nil {
			return nil, ErrCorrupt
		}
		if _, b, err = nullableBytes(b); err != nil {
			return nil, err
		}
	}
	if len(b) != 0 {
		return nil, ErrCorrupt
	}
	return rest, nil
}

func nullableBytes(b []byte) (v, rest []byte, err error) {
	l, n := varint(b)
	if n <= 0 || l < -1 || int64(len(b)-n) < l {
		return nil, nil, ErrCorrupt
	}
	if l == -1 {
		return nil, b[n:], nil
	}
	return b[n : n+int(l) : n+int(l)], b[n+int(l):], nil
}

// varint is binary.Varint with the one- and two-byte encodings (every
// length, delta and count of records under 8 KiB) decoded inline.
func varint(b []byte) (int64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		u := int64(b[0])
		return u>>1 ^ -(u & 1), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := int64(b[0]&0x7f) | int64(b[1])<<7
		return u>>1 ^ -(u & 1), 2
	}
	return binary.Varint(b)
}

func appendNullable(dst, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(v)))
	return append(dst, v...)
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func nullableLen(v []byte) int {
	if v == nil {
		return 1
	}
	return varintLen(int64(len(v))) + len(v)
}

// appendFilled appends r in the length-prefixed wire encoding with its
// value from r.Fill, produced in place. The two length prefixes in front
// of the value are sized from r.FillHint and rewritten once the value's
// length is known; when one turns out to need another number of bytes,
// what follows it moves.
func appendFilled(dst []byte, r *Record) ([]byte, error) {
	start := len(dst)
	vlenLen := varintLen(int64(r.FillHint))
	lenLen := varintLen(int64(1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		nullableLen(r.Key) + vlenLen + r.FillHint + varintLen(int64(r.NumHeaders)) + len(r.Headers)))
	dst = reserve(dst, lenLen)
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullable(dst, r.Key)
	vpos := len(dst)
	dst = reserve(dst, vlenLen)
	dst, err := r.Fill(dst)
	if err != nil {
		return dst, err
	}
	dst = putVarintAt(dst, vpos, vlenLen, int64(len(dst)-vpos-vlenLen))
	dst = binary.AppendVarint(dst, int64(r.NumHeaders))
	dst = append(dst, r.Headers...)
	return putVarintAt(dst, start, lenLen, int64(len(dst)-start-lenLen)), nil
}

// reserve appends n zero bytes (room for a varint) to dst.
func reserve(dst []byte, n int) []byte {
	for range n {
		dst = append(dst, 0)
	}
	return dst
}

// putVarintAt writes v at dst[pos:], where room bytes were reserved for
// it; the two-byte case (lengths from 64 bytes to 8 KiB) is inline.
func putVarintAt(dst []byte, pos, room int, v int64) []byte {
	if u := uint64(v<<1) ^ uint64(v>>63); room == 2 && u >= 1<<7 && u < 1<<14 {
		dst[pos], dst[pos+1] = byte(u)|0x80, byte(u>>7)
		return dst
	}
	return moveVarintAt(dst, pos, room, v)
}

// moveVarintAt is putVarintAt's general case: when v needs another number
// of bytes than room, what follows it moves.
func moveVarintAt(dst []byte, pos, room int, v int64) []byte {
	if n := varintLen(v); n != room {
		end := len(dst)
		dst = reserve(dst, n-room)
		copy(dst[pos+n:], dst[pos+room:end])
		dst = dst[:end+n-room]
	}
	binary.PutVarint(dst[pos:], v)
	return dst
}

// AppendRecord appends r in the length-prefixed wire encoding.
func AppendRecord(dst []byte, r *Record) []byte {
	body := 1 + varintLen(r.TimestampDelta) + varintLen(int64(r.OffsetDelta)) +
		nullableLen(r.Key) + nullableLen(r.Value) + varintLen(int64(r.NumHeaders)) + len(r.Headers)
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendNullable(dst, r.Key)
	dst = appendNullable(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(r.NumHeaders))
	return append(dst, r.Headers...)
}

// AppendHeader appends one encoded header to an encoded header list; the
// caller increments NumHeaders.
func AppendHeader(dst []byte, key string, value []byte) []byte {
	dst = binary.AppendVarint(dst, int64(len(key)))
	dst = append(dst, key...)
	return appendNullable(dst, value)
}

// EachHeader calls fn with the key and value (nil when null) of each of
// the first n headers of r.
func (r *Record) EachHeader(n int, fn func(key, value []byte) error) error {
	b := r.Headers
	for i := 0; i < n && i < r.NumHeaders; i++ {
		k, rest, err := nullableBytes(b)
		if err != nil {
			return err
		}
		v, rest, err := nullableBytes(rest)
		if err != nil {
			return err
		}
		if err := fn(k, v); err != nil {
			return err
		}
		b = rest
	}
	return nil
}

// AppendHeaderBytes is AppendHeader with the key as bytes.
func AppendHeaderBytes(dst, key, value []byte) []byte {
	dst = binary.AppendVarint(dst, int64(len(key)))
	dst = append(dst, key...)
	return appendNullable(dst, value)
}

// LastHeader returns the last header of r and the offset in r.Headers where
// it starts (so r.Headers[:start] with NumHeaders-1 drops it).
func (r *Record) LastHeader() (key, value []byte, start int, ok bool) {
	if r.NumHeaders == 0 {
		return nil, nil, 0, false
	}
	b := r.Headers
	for i := 0; i < r.NumHeaders; i++ {
		start = len(r.Headers) - len(b)
		var err error
		if key, b, err = nullableBytes(b); err != nil {
			return nil, nil, 0, false
		}
		if value, b, err = nullableBytes(b); err != nil {
			return nil, nil, 0, false
		}
	}
	return key, value, start, true
}
