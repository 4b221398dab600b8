package tlsrec

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/internal/aesgcm"
)

// batchConn and batchedTLS are the gateway's present wrapping of
// crypto/tls in brief (infra/gateway/tlsconn.go): reads through a
// sixteen-record buffer, and the records of one Write sent in one write.
type batchConn struct {
	net.Conn
	r        *bufio.Reader
	mu       sync.Mutex
	batching bool
	buf      []byte
}

func (c *batchConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batching {
		return c.Conn.Write(p)
	}
	if len(c.buf) > 0 && len(c.buf)+len(p) > flushAt {
		if _, err := c.Conn.Write(c.buf); err != nil {
			return 0, err
		}
		c.buf = c.buf[:0]
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

type batchedTLS struct {
	*tls.Conn
	raw *batchConn
}

func (b batchedTLS) Write(p []byte) (int, error) {
	b.raw.mu.Lock()
	b.raw.batching = true
	b.raw.mu.Unlock()
	n, err := b.Conn.Write(p)
	b.raw.mu.Lock()
	defer b.raw.mu.Unlock()
	b.raw.batching = false
	if len(b.raw.buf) > 0 {
		_, ferr := b.raw.Conn.Write(b.raw.buf)
		b.raw.buf = b.raw.buf[:0]
		if err == nil {
			err = ferr
		}
	}
	return n, err
}

func batched(server bool) side {
	return func(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
		bc := &batchConn{Conn: raw, r: bufio.NewReaderSize(raw, readBufferSize)}
		tc := tlsConn(bc, cfg, server)
		return batchedTLS{Conn: tc, raw: bc}, tc.HandshakeContext(ctx)
	}
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() (user, sys time.Duration) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// BenchmarkRecordLayer sends writes of 1 MiB and 16 KiB from client to
// server over loopback TCP with crypto/tls as is, crypto/tls wrapped as the
// gateway wraps it, and tlsrec; the reader reads 256 KiB at a time.
// user-ms/MB and sys-ms/MB are the CPU time of the whole process (both
// ends) per MB carried: user time is the record layer and the cipher, system
// time mostly loopback TCP, the same for all three.
func BenchmarkRecordLayer(b *testing.B) {
	gatewayAEAD := Options{NewAEAD: aesgcm.New}
	impls := []struct {
		name     string
		srv, cli side
	}{
		{"crypto-tls", goServer, goClient},
		{"crypto-tls-batched", batched(true), batched(false)},
		{"tlsrec", oursServer(Options{}), oursClient(Options{})},
		// As the gateway runs it: with its own AES-GCM.
		{"tlsrec-aesgcm", oursServer(gatewayAEAD), oursClient(gatewayAEAD)},
	}
	for _, size := range []int{1 << 20, 16 << 10} {
		for _, impl := range impls {
			b.Run(impl.name+"/"+sizeName(size), func(b *testing.B) {
				s, c := connect(b, impl.srv, serverConfig(b, false), impl.cli, clientConfig(b, false))
				s.SetDeadline(time.Time{})
				c.SetDeadline(time.Time{})
				msg := make([]byte, size)
				done := make(chan error, 1)
				total := int64(b.N) * int64(size)
				go func() {
					_, err := io.CopyBuffer(io.Discard, io.LimitReader(readerOnly{s}, total), make([]byte, 256<<10))
					done <- err
				}()
				b.SetBytes(int64(size))
				b.ResetTimer()
				user0, sys0 := cpuTime()
				for range b.N {
					if _, err := c.Write(msg); err != nil {
						b.Fatal(err)
					}
				}
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				user1, sys1 := cpuTime()
				b.StopTimer()
				mb := float64(total) / 1e6
				b.ReportMetric(float64((user1-user0).Microseconds())/1e3/mb, "user-ms/MB")
				b.ReportMetric(float64((sys1-sys0).Microseconds())/1e3/mb, "sys-ms/MB")
				s.Close()
				c.Close()
			})
		}
	}
}

// readerOnly hides WriterTo so io.CopyBuffer reads with its buffer.
type readerOnly struct{ io.Reader }

func sizeName(n int) string {
	if n >= 1<<20 {
		return "1MiB"
	}
	return "16KiB"
}
