package gateway

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/pki"
)

// countingConn counts the writes made to it.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestBatchedTLSWritesLargeFramesInSlices: one 4 MiB Write through
// batchedTLS arrives intact, in writes of about coalesceLimit (not one per
// TLS record, nor one frame-sized buffer grown by copying), and the batch
// buffer stays bounded for the next frame.
func TestBatchedTLSWritesLargeFramesInSlices(t *testing.T) {
	ca, err := pki.New(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Server("gw", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srvCfg, err := ca.ServerTLS(cert, key, false)
	if err != nil {
		t.Fatal(err)
	}
	cliCfg, err := ca.ClientTLS("", "")
	if err != nil {
		t.Fatal(err)
	}
	cliCfg.ServerName = "127.0.0.1"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); accepted <- c }()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peerRaw := <-accepted
	if peerRaw == nil {
		t.Fatal("accept failed")
	}
	counted := &countingConn{Conn: raw}
	srv := tlsServer(counted, srvCfg)
	peer := tls.Client(peerRaw, cliCfg)
	defer srv.Close()
	defer peer.Close()
	for _, c := range []net.Conn{srv, peer} {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	}

	const size = 4 << 20
	frame := make([]byte, size)
	_, _ = rand.Read(frame)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, 2*size))
		got <- b
	}()
	if err := srv.Handshake(); err != nil {
		t.Fatal(err)
	}
	before := counted.writes.Load()
	for range 2 {
		if n, err := srv.Write(frame); err != nil || n != size {
			t.Fatalf("write: %d, %v", n, err)
		}
		if c := cap(srv.raw.buf); c > 2*coalesceLimit {
			t.Errorf("batch buffer holds %d bytes of capacity after a %d-byte frame (limit %d)", c, size, coalesceLimit)
		}
	}
	writes := counted.writes.Load() - before
	// 2 × 4 MiB plus TLS framing (22 bytes a 16 KiB record) in slices of
	// at most coalesceLimit + one record.
	if lo, hi := int64(2*size/(coalesceLimit+17<<10)), int64(2*size/(coalesceLimit-17<<10)+2); writes < lo || writes > hi {
		t.Errorf("%d socket writes for two 4 MiB frames, want %d..%d (slices of about %d)", writes, lo, hi, coalesceLimit)
	}
	b := <-got
	if !bytes.Equal(b, append(append([]byte(nil), frame...), frame...)) {
		t.Fatalf("peer read %d bytes, not the two frames written", len(b))
	}
}
