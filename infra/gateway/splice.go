package gateway

import (
	"context"
	"encoding/binary"
	"io"
	"runtime"
	"sync"
	"unsafe"
)

// A filtered produce request or fetch response differs from the frame it
// came from only in its record sets (when no partition failed): writing it
// back with kmsg would copy every record once more into a new frame. The
// splicer writes the original frame's unchanged stretches and the new
// record sets to the connection as they are, each with its new length.

// splicer describes a decoded message (msg, the body after the header)
// with some of its byte fields replaced.
type splicer struct {
	msg      []byte
	flexible bool
	parts    []splicePart
	size     int // the new message's length
}

// splicePart replaces msg[from:to] (a length prefix and its bytes) with
// prefix[:plen] and val.
type splicePart struct {
	from, to int
	prefix   [binary.MaxVarintLen32]byte
	plen     int
	val      []byte
}

func (s *splicer) reset(msg []byte, flexible bool) {
	s.msg, s.flexible, s.parts, s.size = msg, flexible, s.parts[:0], len(msg)
}

// replace notes that the byte field old, a sub-slice of msg as kmsg decoded
// it, is now val. Fields must be replaced in the order they appear. It
// reports false when old is not a length-prefixed field of msg past the
// last one replaced (a null field, or not from msg): the caller then
// re-encodes the message instead.
func (s *splicer) replace(old, val []byte) bool {
	if old == nil || val == nil {
		return false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(s.msg)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(old)))
	if at < base || at+uintptr(len(old)) > base+uintptr(len(s.msg)) {
		return false
	}
	off := int(at - base)
	var pt splicePart
	var oldPrefix int
	if s.flexible {
		oldPrefix = uvarintLen(uint64(len(old)) + 1)
		pt.plen = binary.PutUvarint(pt.prefix[:], uint64(len(val))+1)
	} else {
		oldPrefix = 4
		binary.BigEndian.PutUint32(pt.prefix[:], uint32(len(val)))
		pt.plen = 4
	}
	pt.from, pt.to, pt.val = off-oldPrefix, off+len(old), val
	last := 0
	if n := len(s.parts); n > 0 {
		last = s.parts[n-1].to
	}
	if pt.from < last || !s.prefixIs(pt.from, off, len(old)) {
		return false
	}
	s.parts = append(s.parts, pt)
	s.size += pt.plen + len(val) - (pt.to - pt.from)
	return true
}

// spliceAll readies s to send msg (a decoded message's body) with each of
// its record sets origs[i], in wire order, replaced by nows[i]; false means
// the message changed otherwise (a set added or removed, or one that
// cannot be located) and must be re-encoded.
func (s *splicer) spliceAll(msg []byte, flexible bool, origs, nows [][]byte) bool {
	s.reset(msg, flexible)
	if len(origs) != len(nows) {
		return false
	}
	for i, old := range origs {
		if !sameBytes(old, nows[i]) && !s.replace(old, nows[i]) {
			return false
		}
	}
	return true
}

// prefixIs checks that msg[from:off] is the length prefix of n bytes.
func (s *splicer) prefixIs(from, off, n int) bool {
	if from < 0 {
		return false
	}
	p := s.msg[from:off]
	if s.flexible {
		v, k := binary.Uvarint(p)
		return k == len(p) && v == uint64(n)+1
	}
	return int32(binary.BigEndian.Uint32(p)) == int32(n)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// writeTo writes the new message to w.
func (s *splicer) writeTo(w io.Writer) error {
	prev := 0
	for i := range s.parts {
		pt := &s.parts[i]
		if err := writeAll(w, s.msg[prev:pt.from]); err != nil {
			return err
		}
		if err := writeAll(w, pt.prefix[:pt.plen]); err != nil {
			return err
		}
		if err := writeAll(w, pt.val); err != nil {
			return err
		}
		prev = pt.to
	}
	return writeAll(w, s.msg[prev:])
}

func writeAll(w io.Writer, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
	return err
}

// Scratch returns a buffer of length 0 and capacity at least n for a
// RecordFilter to build what it puts into the message it is filtering
// (new record sets) in: it stays valid until the gateway has sent that
// message, and is reused after, so large buffers are not allocated, zeroed
// and collected for every request. Outside a gateway call (ctx without a
// scratch) it is a new buffer.
func Scratch(ctx context.Context, n int) []byte {
	s, ok := ctx.Value(scratchKey{}).(*scratch)
	if !ok {
		return make([]byte, 0, n)
	}
	return s.get(n)
}

// WithScratch returns ctx carrying a scratch for RecordFilter calls made
// outside a gateway (tests, benchmarks), and the function that hands its
// buffers back once the filtered message is no longer used.
func WithScratch(ctx context.Context) (context.Context, func()) {
	s := &scratch{}
	return context.WithValue(ctx, scratchKey{}, s), s.release
}

type scratchKey struct{}

// scratch holds the buffers one relay direction's filter calls took for
// the message in hand.
type scratch struct {
	held [][]byte
}

func (s *scratch) get(n int) []byte {
	b := arenas.get(n)
	s.held = append(s.held, b)
	return b[:0]
}

// release hands the buffers back once the message is sent.
func (s *scratch) release() {
	for i, b := range s.held {
		arenas.put(b)
		s.held[i] = nil
	}
	s.held = s.held[:0]
}

// arenas keeps idle scratch buffers. A sync.Pool would drop them at every
// garbage collection, which at saturation comes several times a second;
// the cache is bounded instead: a few buffers per core (filtering is CPU
// work, so about as many requests are in it at once as there are cores),
// none larger than maxArena.
var arenas = arenaCache{max: 2 * runtime.GOMAXPROCS(0)}

const maxArena = 32 << 20

type arenaCache struct {
	mu   sync.Mutex
	idle [][]byte
	max  int
}

func (c *arenaCache) get(n int) []byte {
	c.mu.Lock()
	best := -1
	for i, b := range c.idle {
		if cap(b) >= n && (best < 0 || cap(b) < cap(c.idle[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := c.idle[best]
		last := len(c.idle) - 1
		c.idle[best], c.idle[last] = c.idle[last], nil
		c.idle = c.idle[:last]
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	return make([]byte, 0, n)
}

func (c *arenaCache) put(b []byte) {
	if cap(b) > maxArena {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle) < c.max {
		c.idle = append(c.idle, b)
		return
	}
	// Full: keep the larger buffers, which are the costly ones to make.
	small := 0
	for i, x := range c.idle {
		if cap(x) < cap(c.idle[small]) {
			small = i
		}
	}
	if cap(c.idle[small]) < cap(b) {
		c.idle[small] = b
	}
}
