package gateway

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/planner"
)

// rawConn speaks the Kafka protocol frame by frame, for tests that need
// exact control (pipelining, v0 SASL, bad frames).
type rawConn struct {
	t    testing.TB
	c    net.Conn
	r    *bufio.Reader
	corr int32
	fmt  *kmsg.RequestFormatter
}

func dialRaw(t testing.TB, addr, transport string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if transport != planner.SecurityPlaintext {
		cfg := clientTLS(t, transport)
		cfg.ServerName, _, _ = net.SplitHostPort(addr)
		tc := tls.Client(c, cfg)
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		c = tc
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c), fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))}
}

// frame encodes req with the next correlation id.
func (rc *rawConn) frame(req kmsg.Request) ([]byte, int32) {
	rc.corr++
	return rc.fmt.AppendRequest(nil, req, rc.corr), rc.corr
}

func (rc *rawConn) write(b []byte) {
	rc.t.Helper()
	_ = rc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one frame body (without its size).
func (rc *rawConn) readFrame() ([]byte, error) {
	_ = rc.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(rc.r, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(rc.r, b)
	return b, err
}

// roundTrip sends req and decodes its response.
func (rc *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	rc.t.Helper()
	b, corr := rc.frame(req)
	rc.write(b)
	return rc.response(req, corr)
}

// response reads the response to req sent with corr.
func (rc *rawConn) response(req kmsg.Request, corr int32) kmsg.Response {
	rc.t.Helper()
	body, err := rc.readFrame()
	if err != nil {
		rc.t.Fatalf("read %s response: %v", apiName(req.Key()), err)
	}
	if got := int32(binary.BigEndian.Uint32(body)); got != corr {
		rc.t.Fatalf("%s: correlation id %d, want %d", apiName(req.Key()), got, corr)
	}
	hl, err := responseHeaderLen(body, req.Key(), req.GetVersion())
	if err != nil {
		rc.t.Fatal(err)
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body[hl:]); err != nil {
		rc.t.Fatalf("decode %s v%d response: %v", apiName(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed asserts the peer closes the connection (EOF or reset)
// without sending a frame.
func (rc *rawConn) expectClosed() {
	rc.t.Helper()
	b, err := rc.readFrame()
	if err == nil {
		rc.t.Fatalf("connection still open: got a %d-byte frame", len(b))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		rc.t.Fatalf("connection not closed within the read deadline")
	}
}

// metadata asks for every topic.
func (rc *rawConn) metadata() *kmsg.MetadataResponse {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	return rc.roundTrip(req).(*kmsg.MetadataResponse)
}
