package gateway

import (
	"bufio"
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
	mu       sync.Mutex
	w        *bufio.Writer
	waits    []time.Time // frames written since the last flush
	hist     *histogram
	progress atomic.Uint64
	armed    bool
	seen     uint64 // progress when the timer was armed
	timer    *time.Timer
}

func newRelayWriter(w io.Writer, size int, hist *histogram) *relayWriter {
	rw := &relayWriter{w: bufio.NewWriterSize(w, size), hist: hist}
	rw.timer = time.AfterFunc(time.Hour, rw.stalled)
	rw.timer.Stop()
	return rw
}

func (rw *relayWriter) Write(b []byte) (int, error) {
	rw.mu.Lock()
	n, err := rw.w.Write(b)
	rw.mu.Unlock()
	rw.progress.Add(1)
	return n, err
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
	if rw.w.Buffered() > 0 {
		if err := rw.w.Flush(); err != nil {
			return err
		}
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
