package gateway

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink is a destination the relay goroutine and the stall timer may both
// write to; fail makes every write fail.
type sink struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	fail   error
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.writes++
	return s.b.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRelayWriterReadFrom: bytes read straight into the write buffer go
// out after what was written before them, in order, also when the buffer
// is full (written out first) and when the stall timer flushes the
// earlier bytes while the read waits; a write error is returned instead of
// reading.
func TestRelayWriterReadFrom(t *testing.T) {
	cases := []struct {
		name string
		size int
		run  func(t *testing.T, rw *relayWriter, dst *sink)
	}{
		{"into the free space", 64, func(t *testing.T, rw *relayWriter, dst *sink) {
			_, _ = rw.Write([]byte("frame-1|"))
			n, err := rw.readFrom(strings.NewReader("frame-2 start"), 7)
			if n != 7 || err != nil {
				t.Fatalf("readFrom = %d, %v; want 7, nil", n, err)
			}
			if dst.String() != "" {
				t.Fatalf("wrote %q before a flush", dst.String())
			}
			if err := rw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := dst.String(); got != "frame-1|frame-2" {
				t.Fatalf("got %q", got)
			}
		}},
		{"full buffer written out first", 16, func(t *testing.T, rw *relayWriter, dst *sink) {
			_, _ = rw.Write([]byte("0123456789abcdef"))
			n, err := rw.readFrom(strings.NewReader("ghijklmnopqrstuvwxyz"), 100)
			if n != 16 || err != nil {
				t.Fatalf("readFrom = %d, %v; want 16 (the buffer), nil", n, err)
			}
			if got := dst.String(); got != "0123456789abcdef" {
				t.Fatalf("before the flush: %q", got)
			}
			_ = rw.Flush()
			if got := dst.String(); got != "0123456789abcdefghijklmnopqrstuv" {
				t.Fatalf("got %q", got)
			}
		}},
		{"stall flush while the read waits", 64, func(t *testing.T, rw *relayWriter, dst *sink) {
			pr, pw := io.Pipe()
			_, _ = rw.Write([]byte("whole|"))
			rw.flushSoon()
			type result struct {
				n   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				n, err := rw.readFrom(pr, 32)
				done <- result{n, err}
			}()
			// Nothing arrives: the timer sends the whole frame.
			poll(t, 10*time.Second, "the stall timer flushed the whole frame", func() bool { return dst.String() == "whole|" })
			if _, err := pw.Write([]byte("partial")); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.n != 7 || r.err != nil {
				t.Fatalf("readFrom = %d, %v; want 7, nil", r.n, r.err)
			}
			_, _ = rw.Write([]byte("-rest"))
			if err := rw.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := dst.String(); got != "whole|partial-rest" {
				t.Fatalf("got %q", got)
			}
		}},
		{"write error instead of a read", 8, func(t *testing.T, rw *relayWriter, dst *sink) {
			broken := errors.New("broken pipe")
			dst.fail = broken
			_, _ = rw.Write([]byte("12345678"))
			n, err := rw.readFrom(strings.NewReader("never read"), 4)
			if n != 0 || !errors.Is(err, broken) {
				t.Fatalf("readFrom = %d, %v; want 0, the write error", n, err)
			}
			if _, err := rw.Write([]byte("x")); !errors.Is(err, broken) {
				t.Fatalf("write after the error: %v; want it again", err)
			}
		}},
		{"large write with nothing buffered goes out whole", 8, func(t *testing.T, rw *relayWriter, dst *sink) {
			if n, err := rw.Write([]byte("0123456789")); n != 10 || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if dst.writes != 1 || dst.String() != "0123456789" {
				t.Fatalf("%d writes of %q; want one of the whole", dst.writes, dst.String())
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := &sink{}
			rw := newRelayWriter(dst, c.size, &histogram{})
			defer rw.stop()
			c.run(t, rw, dst)
		})
	}
}
