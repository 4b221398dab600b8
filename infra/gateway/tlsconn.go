package gateway

import (
	"bufio"
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"

	"github.com/xp-bench/xp/internal/tlsrec"
)

// crypto/tls writes every TLS record (at most 16 KiB) to the socket with
// its own write system call. A relay that hands it 256 KiB at a time would
// pay sixteen system calls where one does; at a million records a second
// that is most of the gateway's CPU above the cipher itself. batchedTLS
// collects the records one tls.Conn.Write produces and sends them in one
// write. Writes tls makes on its own (handshake, alerts, key updates
// answered while reading) go straight through, so nothing waits on a
// flush that will not come.

// coalescingConn buffers writes while a batch is open, and reads through a
// large buffer: tls asks for one record at a time, and a saturated socket
// holds many, so one read system call then serves several records.
type coalescingConn struct {
	net.Conn
	r        *bufio.Reader
	mu       sync.Mutex
	batching bool
	buf      []byte
	// writing is set while a write to the socket is under way (with mu
	// held), for batchedTLS.Close.
	writing atomic.Bool
}

// rawReadBuffer is the read buffer under a TLS connection: sixteen
// full-size TLS records.
const rawReadBuffer = 16 * (16<<10 + 256)

func newCoalescingConn(c net.Conn) *coalescingConn {
	return &coalescingConn{Conn: c, r: bufio.NewReaderSize(c, rawReadBuffer)}
}

func (c *coalescingConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *coalescingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batching {
		c.writing.Store(true)
		defer c.writing.Store(false)
		return c.Conn.Write(b)
	}
	// A large frame (a rebuilt multi-megabyte produce request or fetch
	// response) goes out in slices: one buffer of a frame's size would be
	// grown by copying again and again, and thrown away after the frame.
	if len(c.buf) > 0 && len(c.buf)+len(b) > coalesceLimit {
		c.writing.Store(true)
		_, err := c.Conn.Write(c.buf)
		c.writing.Store(false)
		c.buf = c.buf[:0]
		if err != nil {
			return 0, err
		}
	}
	c.buf = append(c.buf, b...)
	return len(b), nil
}

// coalesceLimit is the most a batch collects before it writes: sixteen
// full TLS records, a write system call's worth.
const coalesceLimit = 256 << 10

func (c *coalescingConn) begin() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

// end closes the batch and writes what it collected.
func (c *coalescingConn) end() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batching = false
	if len(c.buf) == 0 {
		return nil
	}
	c.writing.Store(true)
	_, err := c.Conn.Write(c.buf)
	c.writing.Store(false)
	if cap(c.buf) > 1<<20 {
		c.buf = nil // do not pin a huge buffer after one large frame
	} else {
		c.buf = c.buf[:0]
	}
	return err
}

// batchedTLS is a TLS connection whose Write sends the records of one call
// in one system call.
type batchedTLS struct {
	*tls.Conn
	raw *coalescingConn
}

func (b batchedTLS) Write(p []byte) (int, error) {
	b.raw.begin()
	n, err := b.Conn.Write(p)
	if ferr := b.raw.end(); err == nil && ferr != nil {
		return 0, ferr
	}
	return n, err
}

// Close closes the connection. While a write to the socket is under way
// (to a peer that may not be reading) it closes the socket at once, as
// tls.Conn.Close does for a Write in flight: its close_notify alert would
// wait behind that write for up to tls's 5 s write deadline.
func (b batchedTLS) Close() error {
	if b.raw.writing.Load() {
		return b.raw.Conn.Close()
	}
	return b.Conn.Close()
}

// handshake makes the TLS handshake of a leg over c (as its server or its
// client) and returns the connection that carries the leg's data: batched
// crypto/tls by default; with crypto fast, tlsrec for TLS 1.3 AES-GCM
// sessions (crypto/tls keeps the others, and any session the guard of
// tlsrec refuses, which is logged).
func (g *Gateway) handshake(ctx context.Context, c net.Conn, cfg *tls.Config, server bool) (net.Conn, error) {
	if g.crypto.RecordLayer != RecordLayerTLSRec {
		var tc batchedTLS
		if server {
			tc = tlsServer(c, cfg)
		} else {
			tc = tlsClient(c, cfg)
		}
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		return tc, nil
	}
	o := tlsrec.Options{NewAEAD: g.newAEAD, OnKeep: func(reason string) {
		level, i := slog.LevelInfo, keptUntestedGo
		switch reason {
		case tlsrec.KeepNotTLS13AESGCM:
			i = keptNotTLS13AESGCM
		case tlsrec.KeepNoSecrets:
			i = keptNoSecrets
		case tlsrec.KeepSentUnderKeys:
			level, i = slog.LevelWarn, keptSentUnderKeys
		}
		leg := legUpstream
		if server {
			leg = legClient
		}
		g.metrics.tlsKept[leg][i].Add(1)
		g.log.Log(ctx, level, "crypto/tls keeps this connection instead of tlsrec", "reason", reason, "server", server)
	}}
	if server {
		return tlsrec.Server(ctx, c, cfg, o)
	}
	return tlsrec.Client(ctx, c, cfg, o)
}

// tlsServer and tlsClient wrap c for batched writes.
func tlsServer(c net.Conn, cfg *tls.Config) batchedTLS {
	raw := newCoalescingConn(c)
	return batchedTLS{Conn: tls.Server(raw, cfg), raw: raw}
}

func tlsClient(c net.Conn, cfg *tls.Config) batchedTLS {
	raw := newCoalescingConn(c)
	return batchedTLS{Conn: tls.Client(raw, cfg), raw: raw}
}
