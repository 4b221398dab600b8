package tlsrec

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"testing"
)

// expectConn records what Expect is told and counts the bytes read.
type expectConn struct {
	net.Conn
	told, read int
	calls      int
}

func (c *expectConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read += n
	return n, err
}

func (c *expectConn) Expect(n int) { c.told, c.calls = n, c.calls+1 }

// Expect passes down how much ciphertext is still sure to come: the
// application data asked for, less what the Conn holds opened or read, and
// never more than the raw connection then delivers for that data.
func TestExpectPassesDownWhatIsToCome(t *testing.T) {
	var raw *expectConn
	srv := func(ctx context.Context, c net.Conn, cfg *tls.Config) (net.Conn, error) {
		raw = &expectConn{Conn: c}
		return Server(ctx, raw, cfg, Options{})
	}
	s, c := connect(t, srv, serverConfig(t, false), goClient, clientConfig(t, false))
	conn := mustOurs(t, s)
	const total, first = 300 << 10, 50 << 10
	msg := stream(5, total)
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, total)
	if _, err := io.ReadFull(s, got[:first]); err != nil {
		t.Fatal(err)
	}
	conn.Expect(total - first)
	if raw.calls != 1 || raw.told < 0 || raw.told > total-first {
		t.Fatalf("told %d (%d calls) for %d bytes to come", raw.told, raw.calls, total-first)
	}
	before := raw.read
	if _, err := io.ReadFull(s, got[first:]); err != nil {
		t.Fatal(err)
	}
	if came := raw.read - before; came < raw.told {
		t.Fatalf("told %d bytes were sure to come; %d came", raw.told, came)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("data altered")
	}
	conn.Expect(0)
	if raw.told != 0 {
		t.Fatalf("Expect(0) passed down %d", raw.told)
	}
}
