package gateway

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// stallFlush is how long relayed frames may wait in a write buffer while the
// relay is stuck reading an incomplete next frame.
const stallFlush = 500 * time.Microsecond

// relayWriter is the buffered writer of one relay direction. The relay loop
// flushes when its read buffer is empty, so frames that arrive together
// leave together; when the read buffer holds only part of the next frame,
// the loop arms a timer instead of flushing at once (at saturation that
// flush would cost a system call per frame), and the timer flushes only if
// the loop has made no progress since, so a complete frame never waits on
// an incomplete one for more than about two stallFlush periods.
type relayWriter struct {
	mu sync.Mutex
	w  io.Writer
	// buf[:n] waits to be written. The relay goroutine is the only one
	// that adds to it; the stall timer only flushes.
	buf []byte
	n   int
	// flushes counts successful flushes, so that readFrom can tell
	// whether the buffer was emptied under it.
	flushes  uint64
	err      error       // the first write error, returned from then on
	waits    []time.Time // frames written since the last flush
	hist     *histogram
	progress atomic.Uint64
	armed    bool
	seen     uint64 // progress when the timer was armed
	timer    *time.Timer
}

func newRelayWriter(w io.Writer, size int, hist *histogram) *relayWriter {
	rw := &relayWriter{w: w, buf: make([]byte, size), hist: hist}
	rw.timer = time.AfterFunc(time.Hour, rw.stalled)
	rw.timer.Stop()
	return rw
}

// Write buffers b, writing the buffer out whenever it fills; a b at least
// as large as the buffer goes out directly when nothing is buffered.
func (rw *relayWriter) Write(b []byte) (int, error) {
	rw.mu.Lock()
	n, err := rw.writeLocked(b)
	rw.mu.Unlock()
	rw.progress.Add(1)
	return n, err
}

func (rw *relayWriter) writeLocked(b []byte) (int, error) {
	if rw.err != nil {
		return 0, rw.err
	}
	written := 0
	for len(b) > len(rw.buf)-rw.n {
		var m int
		if rw.n == 0 {
			// Large and nothing buffered: no copy.
			m, rw.err = rw.w.Write(b)
			if rw.err == nil && m < len(b) {
				rw.err = io.ErrShortWrite
			}
		} else {
			m = copy(rw.buf[rw.n:], b)
			rw.n += m
			rw.writeOut()
		}
		written += m
		b = b[m:]
		if rw.err != nil {
			return written, rw.err
		}
	}
	rw.n += copy(rw.buf[rw.n:], b)
	return written + len(b), nil
}

// writeOut writes buf[:n] to w.
func (rw *relayWriter) writeOut() {
	if rw.err != nil || rw.n == 0 {
		return
	}
	m, err := rw.w.Write(rw.buf[:rw.n])
	if err == nil && m < rw.n {
		err = io.ErrShortWrite
	}
	if err != nil {
		rw.err = err
		return
	}
	rw.n = 0
	rw.flushes++
}

// readFrom reads once from r, at most max bytes, straight into the free
// part of the buffer (writing the buffer out first if it is full): a frame
// passing through is then copied once in user space instead of twice (read
// buffer, then write buffer). It returns how many bytes it read and the
// read's error, or the write error that kept it from reading. The lock is
// not held during the read, so the stall timer can still flush the frames
// buffered before; the bytes read then move to the front.
func (rw *relayWriter) readFrom(r io.Reader, max int) (int, error) {
	rw.mu.Lock()
	if rw.n == len(rw.buf) {
		rw.writeOut()
	}
	if rw.err != nil {
		err := rw.err
		rw.mu.Unlock()
		return 0, err
	}
	start, flushes := rw.n, rw.flushes
	dst := rw.buf[start:min(len(rw.buf), start+max)]
	rw.mu.Unlock()

	m, err := r.Read(dst)

	rw.mu.Lock()
	if m > 0 {
		if rw.flushes != flushes {
			copy(rw.buf[rw.n:], rw.buf[start:start+m])
		}
		rw.n += m
	}
	rw.mu.Unlock()
	rw.progress.Add(1)
	return m, err
}

// frameDone records that a whole frame has been written, for the latency
// histogram, and returns how many wait for a flush.
func (rw *relayWriter) frameDone() int {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.waits = append(rw.waits, time.Now())
	return len(rw.waits)
}

// Flush writes everything buffered and observes the frames' time inside
// the gateway.
func (rw *relayWriter) Flush() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.flushLocked()
}

func (rw *relayWriter) flushLocked() error {
	if rw.armed {
		rw.timer.Stop()
		rw.armed = false
	}
	rw.writeOut()
	if rw.err != nil {
		return rw.err
	}
	observe(rw.hist, &rw.waits)
	return nil
}

// flushSoon arms the stall timer.
func (rw *relayWriter) flushSoon() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if !rw.armed {
		rw.armed, rw.seen = true, rw.progress.Load()
		rw.timer.Reset(stallFlush)
	}
}

func (rw *relayWriter) stalled() {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if !rw.armed {
		return
	}
	if p := rw.progress.Load(); p != rw.seen {
		// Still moving: look again later.
		rw.seen = p
		rw.timer.Reset(stallFlush)
		return
	}
	// An error here means a broken socket, which the relay loop meets on
	// its next read or write.
	_ = rw.flushLocked()
}

func (rw *relayWriter) stop() {
	rw.mu.Lock()
	rw.armed = false
	rw.timer.Stop()
	rw.mu.Unlock()
}
