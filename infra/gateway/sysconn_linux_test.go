package gateway

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xp-bench/xp/internal/tlsrec"
	"github.com/xp-bench/xp/planner"
)

// tcpPair is a loopback TCP connection: a sysConn and the plain peer.
func tcpPair(t *testing.T) (*sysConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	s, ok := rawSyscalls(c).(*sysConn)
	if !ok {
		t.Fatalf("rawSyscalls(%T) did not wrap a TCP connection", c)
	}
	t.Cleanup(func() { s.Close(); peer.Close() })
	return s, peer
}

// TestSysConn: the raw-syscall connection behaves as net.TCPConn does:
// bytes both ways intact (writes larger than the socket buffers wait for
// room), EOF, deadlines, Close under a blocked read, write errors as
// *net.OpError "write", zero-length calls.
func TestSysConn(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, s *sysConn, peer net.Conn)
	}{
		{"8MiB each way at once", func(t *testing.T, s *sysConn, peer net.Conn) {
			out, back := make([]byte, 8<<20), make([]byte, 8<<20)
			_, _ = rand.Read(out)
			_, _ = rand.Read(back)
			// A lost byte fails the case instead of hanging it.
			for _, c := range []net.Conn{s, peer} {
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			}
			errc := make(chan error, 3)
			// The peer echoes what it reads into got, and sends back.
			var got bytes.Buffer
			go func() { _, err := io.CopyN(&got, peer, int64(len(out))); errc <- err }()
			go func() { _, err := peer.Write(back); errc <- err }()
			go func() { _, err := s.Write(out); errc <- err }()
			read := make([]byte, len(back))
			if _, err := io.ReadFull(s, read); err != nil {
				t.Fatalf("read: %v", err)
			}
			for range 3 {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(read, back) || !bytes.Equal(got.Bytes(), out) {
				t.Fatal("bytes changed in transit")
			}
		}},
		{"EOF after the peer closes", func(t *testing.T, s *sysConn, peer net.Conn) {
			_, _ = peer.Write([]byte("last"))
			peer.Close()
			b, err := io.ReadAll(s)
			if err != nil || string(b) != "last" {
				t.Fatalf("ReadAll = %q, %v; want \"last\", nil", b, err)
			}
			if n, err := s.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("read after EOF = %d, %v; want 0, EOF", n, err)
			}
		}},
		{"read deadline", func(t *testing.T, s *sysConn, _ net.Conn) {
			_ = s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := s.Read(make([]byte, 1))
			var ne net.Error
			if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
				t.Fatalf("read past the deadline: %v; want a timeout", err)
			}
		}},
		{"close while a read waits", func(t *testing.T, s *sysConn, _ net.Conn) {
			errc := make(chan error, 1)
			go func() { _, err := s.Read(make([]byte, 1)); errc <- err }()
			// The read is parked or about to be: either way Close ends it.
			s.Close()
			select {
			case err := <-errc:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("read after close: %v; want net.ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("read still blocked 10 s after Close")
			}
		}},
		{"write to a reset peer", func(t *testing.T, s *sysConn, peer net.Conn) {
			_ = peer.(*net.TCPConn).SetLinger(0)
			peer.Close() // RST
			buf := make([]byte, 64<<10)
			deadline := time.Now().Add(10 * time.Second)
			var err error
			for err == nil && time.Now().Before(deadline) {
				_, err = s.Write(buf)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "write" {
				t.Fatalf("write to a reset peer: %v; want a *net.OpError write", err)
			}
		}},
		{"zero-length calls", func(t *testing.T, s *sysConn, _ net.Conn) {
			if n, err := s.Read(nil); n != 0 || err != nil {
				t.Fatalf("Read(nil) = %d, %v", n, err)
			}
			if n, err := s.Write(nil); n != 0 || err != nil {
				t.Fatalf("Write(nil) = %d, %v", n, err)
			}
		}},
		{"no allocations per call", func(t *testing.T, s *sysConn, peer net.Conn) {
			msg := make([]byte, 512)
			buf := make([]byte, 512)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := s.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(peer, buf); err != nil {
					t.Fatal(err)
				}
				if _, err := peer.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(s, buf); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 0 {
				t.Fatalf("%.1f allocations per write and read; want 0", allocs)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, peer := tcpPair(t)
			c.run(t, s, peer)
		})
	}
}

// TestRawSyscallsOnlyTCP: connections that are not TCP pass unchanged.
func TestRawSyscallsOnlyTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := rawSyscalls(a); got != a {
		t.Fatalf("rawSyscalls(net.Pipe) = %T; want it unchanged", got)
	}
}

// TestGatewayUsesRawSyscalls: both legs of a relayed connection, plaintext
// or under TLS (the gateway's record layer or crypto/tls), read and write
// through a sysConn.
func TestGatewayUsesRawSyscalls(t *testing.T) {
	cases := []struct{ name, client, upstream, layer string }{
		{"plaintext both legs", planner.SecurityPlaintext, planner.SecurityPlaintext, ""},
		{"tls both legs (std: crypto/tls)", planner.SecurityTLS, planner.SecurityTLS, planner.GatewayCryptoStd},
		{"tls both legs (fast: tlsrec)", planner.SecurityTLS, planner.SecurityTLS, planner.GatewayCryptoFast},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kf := startUpstream(t, upstreamSpec{brokers: 1, transport: tc.upstream})
			cfg := gatewayConfig(t, kf, tc.client, tc.upstream)
			cfg.Crypto = tc.layer
			g := startGateway(t, cfg)
			rc := dialRaw(t, g.Bootstrap(), tc.client)
			rc.metadata() // the connection is relayed, so registered
			g.mu.RLock()
			defer g.mu.RUnlock()
			if len(g.conns) != 1 {
				t.Fatalf("%d relayed connections; want 1", len(g.conns))
			}
			for p := range g.conns {
				for leg, c := range map[string]net.Conn{"client": p.client, "upstream": p.upstream} {
					switch tc.layer {
					case planner.GatewayCryptoFast:
						rec, ok := c.(*tlsrec.Conn)
						if !ok {
							t.Fatalf("%s leg is a %T; want the gateway's record layer", leg, c)
						}
						c = rec.NetConn()
					case planner.GatewayCryptoStd:
						b, ok := c.(batchedTLS)
						if !ok {
							t.Fatalf("%s leg is a %T; want crypto/tls, batched", leg, c)
						}
						c = b.raw.Conn
					}
					if _, ok := c.(*sysConn); !ok {
						t.Errorf("%s leg reads and writes through %T, not a sysConn", leg, c)
					}
				}
			}
		})
	}
}

// rcvlowat is the socket's SO_RCVLOWAT.
func rcvlowat(t *testing.T, s *sysConn) int {
	t.Helper()
	var v int
	var gerr error
	if err := s.rc.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

// waitFor polls cond until it holds, failing after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}

// With the rest of a frame expected, a read that finds the socket empty
// waits for up to expectMax bytes at once (SO_RCVLOWAT), never for more
// than is still to come, so the frame's last bytes, arriving in small
// pieces, still complete it; once the frame is done (Expect(0)) the next
// wait is for any data again.
func TestSysConnExpect(t *testing.T) {
	s, peer := tcpPair(t)
	_ = s.SetDeadline(time.Now().Add(20 * time.Second))
	const frame = 100<<10 + 2*expectMax
	out := make([]byte, frame)
	_, _ = rand.Read(out)
	var got atomic.Int64
	readDone := make(chan error, 1)
	in := make([]byte, frame)
	left := -1 // what the reader still expected after the frame
	go func() {
		s.Expect(frame)
		for got.Load() < frame {
			n, err := s.Read(in[got.Load():])
			if err != nil {
				readDone <- err
				return
			}
			got.Add(int64(n))
		}
		left = s.expect
		s.Expect(0)
		readDone <- nil
	}()
	if _, err := peer.Write(out[:100<<10]); err != nil {
		t.Fatal(err)
	}
	// At least twice expectMax still to come: once the reader has taken
	// what there is, it waits for expectMax. (The writer must not wait for the
	// reader in the middle of a frame: no Kafka peer does, and the
	// reader would wait for bytes that never come.)
	waitFor(t, "SO_RCVLOWAT at expectMax", func() bool { return rcvlowat(t, s) == expectMax })
	if g := got.Load(); g > 100<<10 {
		t.Fatalf("the reader took %d bytes of 100 KiB sent", g)
	}
	// The rest goes out in small pieces, as a peer sends a frame:
	// without waiting for the reader, which never waits for more than is
	// still to come, so the last pieces complete the frame.
	for off := 100 << 10; off < frame; off += 1000 {
		if _, err := peer.Write(out[off:min(off+1000, frame)]); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-readDone; err != nil {
		t.Fatalf("reading the frame: %v", err)
	}
	if !bytes.Equal(in, out) {
		t.Fatal("the frame arrived altered")
	}
	if left != 0 {
		t.Fatalf("the reader still expected %d bytes after the frame; want 0 (each read counts against it)", left)
	}
	// Frame done: the next wait is for one byte.
	one := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := s.Read(b)
		one <- err
	}()
	waitFor(t, "SO_RCVLOWAT back to 1", func() bool { return rcvlowat(t, s) == 1 })
	if _, err := peer.Write([]byte{7}); err != nil {
		t.Fatal(err)
	}
	if err := <-one; err != nil {
		t.Fatalf("reading one byte after the frame: %v", err)
	}
}
