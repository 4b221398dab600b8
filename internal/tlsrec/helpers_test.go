package tlsrec

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/pki"
)

// testTimeout bounds every connection a test makes (through deadlines), so
// a broken record layer fails a test instead of hanging it.
const testTimeout = 60 * time.Second

var (
	caOnce sync.Once
	ca     *pki.Authority
	caErr  error
	caDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if caDir != "" {
		os.RemoveAll(caDir)
	}
	os.Exit(code)
}

func authority(t testing.TB) *pki.Authority {
	t.Helper()
	caOnce.Do(func() {
		caDir, caErr = os.MkdirTemp("", "tlsrec-pki-")
		if caErr != nil {
			return
		}
		ca, caErr = pki.New(caDir)
		if caErr != nil {
			return
		}
		if _, _, caErr = ca.Server("server"); caErr != nil {
			return
		}
		_, _, caErr = ca.Client("alice")
	})
	if caErr != nil {
		t.Fatal(caErr)
	}
	return ca
}

func certPaths(a *pki.Authority, name string) (string, string) {
	return a.Dir() + "/" + name + ".pem", a.Dir() + "/" + name + "-key.pem"
}

// serverConfig presents the server certificate; with mtls it demands a
// client certificate from the CA.
func serverConfig(t testing.TB, mtls bool) *tls.Config {
	a := authority(t)
	cert, key := certPaths(a, "server")
	cfg, err := a.ServerTLS(cert, key, mtls)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// clientConfig trusts the CA and verifies "localhost"; withCert presents
// alice's certificate.
func clientConfig(t testing.TB, withCert bool) *tls.Config {
	a := authority(t)
	cert, key := "", ""
	if withCert {
		cert, key = certPaths(a, "alice")
	}
	cfg, err := a.ClientTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ServerName = "localhost"
	return cfg
}

// side runs one end's handshake.
type side func(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error)

func oursServer(o Options) side {
	return func(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
		return Server(ctx, raw, cfg, o)
	}
}

func oursClient(o Options) side {
	return func(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
		return Client(ctx, raw, cfg, o)
	}
}

func goServer(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
	c := tls.Server(raw, cfg)
	return c, c.HandshakeContext(ctx)
}

func goClient(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
	c := tls.Client(raw, cfg)
	return c, c.HandshakeContext(ctx)
}

// tcpPair is a connected loopback TCP pair with deadlines testTimeout away.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	accepted := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		accepted <- res{c, err}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-accepted
	if r.err != nil {
		t.Fatal(r.err)
	}
	server = r.c
	deadline := time.Now().Add(testTimeout)
	server.SetDeadline(deadline)
	client.SetDeadline(deadline)
	t.Cleanup(func() {
		server.Close()
		client.Close()
	})
	return server, client
}

// handshakePair runs both handshakes over raw loopback conns and returns
// both ends' errors.
func handshakePair(t testing.TB, srv side, scfg *tls.Config, cli side, ccfg *tls.Config, rs, rc net.Conn) (s, c net.Conn, serr, cerr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, serr = srv(ctx, rs, scfg)
	}()
	c, cerr = cli(ctx, rc, ccfg)
	if cerr != nil {
		rc.Close() // unblock the server's handshake
	}
	<-done
	return s, c, serr, cerr
}

// connect makes a TLS connection between srv and cli over loopback TCP.
func connect(t testing.TB, srv side, scfg *tls.Config, cli side, ccfg *tls.Config) (s, c net.Conn) {
	t.Helper()
	rs, rc := tcpPair(t)
	s, c, serr, cerr := handshakePair(t, srv, scfg, cli, ccfg, rs, rc)
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: server: %v; client: %v", serr, cerr)
	}
	return s, c
}

// stream is deterministic test data for one direction.
func stream(seed uint64, n int) []byte {
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	r := rand.NewChaCha8(s)
	b := make([]byte, n)
	r.Read(b)
	return b
}

// testSizes are the message sizes every interop test sends: empty, tiny,
// one byte either side of a full record, and many records.
var testSizes = []int{0, 1, 100, 16383, 16384, 16385, 100 << 10, 1 << 20}

func sum(sizes []int) int {
	n := 0
	for _, s := range sizes {
		n += s
	}
	return n
}

// readSizes vary the caller's buffer so records are opened both straight
// into it and through the internal buffer.
var readSizes = []int{1, 7, 100, 16383, 16384, 16401, 40000, 300000}

// readExactly reads want bytes with varying buffer sizes and compares them.
func readExactly(c net.Conn, want []byte) error {
	got := make([]byte, 0, len(want))
	scratch := make([]byte, 300000)
	for i := 0; len(got) < len(want); i++ {
		buf := scratch[:min(readSizes[i%len(readSizes)], len(want)-len(got))]
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if len(got) > len(want) {
			return fmt.Errorf("read %d bytes, want %d", len(got), len(want))
		}
		if err != nil && len(got) < len(want) {
			return fmt.Errorf("after %d of %d bytes: %w", len(got), len(want), err)
		}
	}
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("byte %d of %d differs", i, len(want))
		}
	}
	return nil
}

// writeMessages writes data as messages of the given sizes, one Write each;
// between messages it calls between (when non-nil) with the index.
func writeMessages(c net.Conn, data []byte, sizes []int, between func(i int) error) error {
	off := 0
	for i, s := range sizes {
		if between != nil {
			if err := between(i); err != nil {
				return err
			}
		}
		n, err := c.Write(data[off : off+s])
		if err != nil {
			return fmt.Errorf("message %d (%d bytes): %w", i, s, err)
		}
		if n != s {
			return fmt.Errorf("message %d: wrote %d of %d", i, n, s)
		}
		off += s
	}
	return nil
}

// exchange sends messages of sizes from a to b and from b to a at the same
// time and checks both streams byte for byte.
func exchange(t testing.TB, a, b net.Conn, sizes []int, aBetween, bBetween func(int) error) {
	t.Helper()
	total := sum(sizes)
	ab, ba := stream(1, total), stream(2, total)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	run("a writes", func() error { return writeMessages(a, ab, sizes, aBetween) })
	run("b writes", func() error { return writeMessages(b, ba, sizes, bBetween) })
	run("b reads", func() error { return readExactly(b, ab) })
	run("a reads", func() error { return readExactly(a, ba) })
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// expectEOF reads from c until it returns an error, which must be io.EOF
// with no data before it.
func expectEOF(c net.Conn) error {
	buf := make([]byte, 100)
	n, err := c.Read(buf)
	if n != 0 || !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %d bytes, %v; want io.EOF", n, err)
	}
	return nil
}
