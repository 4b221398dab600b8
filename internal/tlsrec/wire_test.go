package tlsrec

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// crypto/tls servers send a NewSessionTicket after the handshake; our
// client skips it.
func TestNewSessionTicketIgnored(t *testing.T) {
	for _, mtls := range []bool{false, true} {
		scfg := serverConfig(t, mtls) // tickets on, as by default
		ccfg := clientConfig(t, mtls)
		ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		s, c := connect(t, goServer, scfg, oursClient(Options{}), ccfg)
		rc := mustOurs(t, c)
		exchange(t, s, rc, []int{1, 16385}, nil, nil)
		if rc.tickets == 0 {
			t.Errorf("mtls=%v: no ticket seen; the test does not test", mtls)
		}
	}
}

// corruptingProxy relays between two TCP pairs and, when armed, flips the
// last byte of the next chunk it relays in that direction.
type corruptingProxy struct {
	toServer, toClient atomic.Bool
}

// proxied connects srv and cli through a corruptingProxy.
func proxied(t *testing.T, srv side, scfg *tls.Config, cli side, ccfg *tls.Config) (s, c net.Conn, p *corruptingProxy) {
	t.Helper()
	rs, pc := tcpPair(t) // server end, proxy's client end
	ps, rc := tcpPair(t) // proxy's server end, client end
	p = &corruptingProxy{}
	pump := func(dst, src net.Conn, armed *atomic.Bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if armed.CompareAndSwap(true, false) {
					buf[n-1] ^= 0x40
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go pump(pc, ps, &p.toServer)
	go pump(ps, pc, &p.toClient)
	s, c, serr, cerr := handshakePair(t, srv, scfg, cli, ccfg, rs, rc)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: server: %v; client: %v", serr, cerr)
	}
	return s, c, p
}

// A flipped ciphertext bit makes Read fail with no data, and the peer is
// told with bad_record_mac.
func TestTamperedRecord(t *testing.T) {
	for _, side := range sides {
		t.Run(side.name, func(t *testing.T) {
			scfg := serverConfig(t, false)
			scfg.SessionTicketsDisabled = true // nothing but our data after the handshake
			var ours *Conn
			var peer net.Conn
			var p *corruptingProxy
			if side.oursIsSrv {
				s, c, px := proxied(t, oursServer(Options{}), scfg, goClient, clientConfig(t, false))
				ours, peer, p = mustOurs(t, s), c, px
				p.toServer.Store(true)
			} else {
				s, c, px := proxied(t, goServer, scfg, oursClient(Options{}), clientConfig(t, false))
				ours, peer, p = mustOurs(t, c), s, px
				p.toClient.Store(true)
			}
			if _, err := peer.Write([]byte(strings.Repeat("secret ", 100))); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1000)
			n, err := ours.Read(buf)
			var pe *ProtocolError
			if n != 0 || !errors.As(err, &pe) || pe.Alert != AlertBadRecordMAC {
				t.Fatalf("Read = %d, %v; want 0 and bad_record_mac", n, err)
			}
			if n, err := ours.Read(buf); n != 0 || err != pe {
				t.Errorf("second Read = %d, %v; want the same error", n, err)
			}
			if _, err := ours.Write([]byte("x")); err == nil {
				t.Error("Write after a failed record succeeded")
			}
			_, err = peer.Read(buf)
			if err == nil || !strings.Contains(err.Error(), "bad record MAC") {
				t.Errorf("peer Read error %v, want our bad_record_mac alert", err)
			}
		})
	}
}

// close_notify reads as io.EOF, from crypto/tls to ours, ours to crypto/tls
// and ours to ours; a closed Conn refuses Writes.
func TestCloseNotify(t *testing.T) {
	cases := []struct {
		name       string
		srv, cli   side
		closeSrv   bool
		oursCloser bool
	}{
		{"ours server closes, go client reads", oursServer(Options{}), goClient, true, true},
		{"go client closes, ours server reads", oursServer(Options{}), goClient, false, false},
		{"ours client closes, go server reads", goServer, oursClient(Options{}), false, true},
		{"go server closes, ours client reads", goServer, oursClient(Options{}), true, false},
		{"ours client closes, ours server reads", oursServer(Options{}), oursClient(Options{}), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scfg := serverConfig(t, false)
			scfg.SessionTicketsDisabled = true
			s, c := connect(t, tc.srv, scfg, tc.cli, clientConfig(t, false))
			closer, reader := c, s
			if tc.closeSrv {
				closer, reader = s, c
			}
			exchange(t, s, c, []int{100}, nil, nil)
			if err := closer.Close(); err != nil {
				t.Fatal(err)
			}
			if err := expectEOF(reader); err != nil {
				t.Error(err)
			}
			if tc.oursCloser {
				if _, err := closer.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
					t.Errorf("Write after Close: %v, want net.ErrClosed", err)
				}
			}
		})
	}
}

// CloseWrite ends our direction and leaves the other open.
func TestCloseWrite(t *testing.T) {
	ours, peer := withGoPeer(t, true)
	if err := ours.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if err := expectEOF(peer); err != nil {
		t.Error(err)
	}
	if _, err := ours.Write([]byte("x")); !errors.Is(err, ErrWriteClosed) {
		t.Errorf("Write after CloseWrite: %v", err)
	}
	if _, err := peer.Write([]byte("still")); err != nil {
		t.Fatal(err)
	}
	if err := readExactly(ours, []byte("still")); err != nil {
		t.Error(err)
	}
}

// A peer that stops reading blocks our Write; Close then returns at once
// and the Write fails.
func TestCloseWithBlockedWrite(t *testing.T) {
	ours, _ := withGoPeer(t, false) // the go server never reads
	ours.SetWriteDeadline(time.Time{})
	written := make(chan error, 1)
	go func() {
		big := make([]byte, 1<<20)
		var err error
		for i := 0; i < 256 && err == nil; i++ { // at most 256 MiB, far past any socket buffer
			_, err = ours.Write(big)
		}
		written <- err
	}()
	// Wait (bounded) until the Write has been inside one socket write for
	// 200 checks in a row: a 256 KiB write to loopback takes far less
	// unless it is blocked.
	for i, stuck := 0, 0; stuck < 200; i++ {
		if i == 20000 {
			t.Fatal("Write never blocked in the socket")
		}
		if ours.writing.Load() {
			stuck++
		} else {
			stuck = 0
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	if err := ours.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > closeNotifyTimeout/2 {
		t.Errorf("Close took %v", d)
	}
	select {
	case err := <-written:
		if err == nil {
			t.Error("the blocked Write succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked Write did not return after Close")
	}
}

// A socket closed at a record boundary without close_notify reads as
// io.EOF; one closed inside a record as io.ErrUnexpectedEOF.
func TestTruncation(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail []byte
		want error
	}{
		{"at a record boundary", nil, io.EOF},
		{"inside a header", []byte{23, 3}, io.ErrUnexpectedEOF},
		{"inside a record", []byte{23, 3, 3, 0, 40, 1, 2, 3}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, rc := tcpPair(t)
			s, c, serr, cerr := handshakePair(t, oursServer(Options{}), serverConfig(t, false), goClient, clientConfig(t, false), rs, rc)
			if serr != nil || cerr != nil {
				t.Fatal(serr, cerr)
			}
			if _, err := c.Write([]byte("last")); err != nil {
				t.Fatal(err)
			}
			if len(tc.tail) > 0 {
				if _, err := rc.Write(tc.tail); err != nil {
					t.Fatal(err)
				}
			}
			rc.Close()
			if err := readExactly(s, []byte("last")); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Read(make([]byte, 10)); n != 0 || err != tc.want {
				t.Errorf("Read = %d, %v; want %v", n, err, tc.want)
			}
		})
	}
}

// A handshake that outlives its context is abandoned.
func TestHandshakeContext(t *testing.T) {
	rs, _ := tcpPair(t) // the client never speaks
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Server(ctx, rs, serverConfig(t, false), Options{}); err == nil {
		t.Error("handshake with a cancelled context succeeded")
	}
}

// Deadlines are the socket's: a read that times out leaves the stream
// intact, a write that times out breaks the connection for writing (a
// record may be half sent).
func TestDeadlines(t *testing.T) {
	ours, peer := withGoPeer(t, false)
	ours.SetReadDeadline(time.Now().Add(-time.Second))
	if n, err := ours.Read(make([]byte, 10)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline = %d, %v", n, err)
	}
	ours.SetReadDeadline(time.Time{})
	exchange(t, ours, peer, []int{5, 70000}, nil, nil)

	ours.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := ours.Write([]byte("late")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write past the deadline: %v", err)
	}
	ours.SetWriteDeadline(time.Time{})
	if _, err := ours.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Write after a timed-out Write: %v, want the same error", err)
	}
}
