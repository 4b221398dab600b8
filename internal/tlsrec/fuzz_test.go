package tlsrec

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// wireConn is a net.Conn that reads a fixed byte string and swallows what
// is written (alerts, KeyUpdate answers).
type wireConn struct {
	r *bytes.Reader
	w io.Writer // nil: discard
}

func (w *wireConn) Read(p []byte) (int, error) { return w.r.Read(p) }
func (w *wireConn) Write(p []byte) (int, error) {
	if w.w == nil {
		return len(p), nil
	}
	return w.w.Write(p)
}
func (w *wireConn) Close() error                     { return nil }
func (w *wireConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (w *wireConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (w *wireConn) SetDeadline(time.Time) error      { return nil }
func (w *wireConn) SetReadDeadline(time.Time) error  { return nil }
func (w *wireConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzSecret is the traffic secret of the fuzzed direction.
var fuzzSecret = bytes.Repeat([]byte{7}, 32)

func fuzzDirection(t testing.TB) direction {
	s, _ := suiteFor(tls.TLS_AES_128_GCM_SHA256)
	d := direction{suite: s, newAEAD: defaultAEAD}
	if err := d.setSecret(bytes.Clone(fuzzSecret)); err != nil {
		t.Fatal(err)
	}
	return d
}

// readerOver is a Conn reading wire under fuzzSecret.
func readerOver(t testing.TB, wire []byte) *Conn {
	c := &Conn{
		raw:            &wireConn{r: bytes.NewReader(wire)},
		in:             fuzzDirection(t),
		out:            fuzzDirection(t),
		rbuf:           make([]byte, readBufferSize),
		keyUpdateAfter: defaultKeyUpdateAfter,
	}
	return c
}

// seal makes a record of the inner plaintext (content, type, padding) as
// the peer would under d.
func seal(d *direction, inner []byte) []byte {
	n := len(inner) + tagLen
	rec := []byte{typeApplicationData, 3, 3, byte(n >> 8), byte(n)}
	nonce, _ := d.nextNonce()
	return d.aead.Seal(rec, nonce, inner, rec[:recordHeaderLen])
}

// drain reads c until an error, with buffers of varying size; every read
// is bounded by the input, so the loop is too.
func drain(t *testing.T, c *Conn, limit int) (data []byte, err error) {
	buf := make([]byte, 40000)
	for i := 0; i <= limit; i++ {
		n, err := c.Read(buf[:1+(i*7919)%len(buf)])
		data = append(data, buf[:n]...)
		if err != nil {
			return data, err
		}
		if n == 0 {
			t.Fatalf("Read returned 0 bytes and no error")
		}
	}
	t.Fatalf("still reading after %d reads", limit)
	return nil, nil
}

// Arbitrary bytes on the wire: no panic, no data from records that fail
// authentication, and an error in the end.
func FuzzReadWire(f *testing.F) {
	d := fuzzDirection(f)
	var valid []byte
	for _, inner := range [][]byte{
		[]byte("hello\x17"),
		[]byte("padded\x17\x00\x00\x00"),
		{msgNewSessionTicket, 0, 0, 2, 9, 9, typeHandshake},
		append(bytes.Repeat([]byte{'z'}, maxPlaintext), typeApplicationData),
		{1, 0, typeAlert},
	} {
		valid = append(valid, seal(&d, inner)...)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add([]byte{23, 3, 3, 0xff, 0xff})
	f.Add([]byte{21, 3, 3, 0, 2, 2, 20})
	f.Add([]byte{23, 3, 3, 0, 0})
	f.Fuzz(func(t *testing.T, wire []byte) {
		c := readerOver(t, wire)
		data, err := drain(t, c, len(wire)+1)
		if err == nil {
			t.Fatal("drain ended without an error")
		}
		if len(data) > len(wire) {
			t.Fatalf("%d bytes of data from %d on the wire", len(data), len(wire))
		}
		if bytes.Equal(wire, valid) && (!errors.Is(err, io.EOF) || len(data) != len("hellopadded")+maxPlaintext) {
			t.Fatalf("valid stream: %d bytes, %v", len(data), err)
		}
	})
}

// Arbitrary inner plaintexts, sealed correctly: the content-type, padding,
// handshake-message and alert parsing must hold up, and only application
// data records give data.
func FuzzInnerPlaintext(f *testing.F) {
	f.Add([]byte("\x06hello\x17"))
	f.Add([]byte("\x09padded\x17\x00\x00"))
	f.Add([]byte{6, msgKeyUpdate, 0, 0, 1, 1, typeHandshake, 3, 'a', 'b', typeApplicationData})
	f.Add([]byte{3, msgNewSessionTicket, 0, typeHandshake, 4, 0, 2, 1, typeHandshake, 4, 1, 2, 3, typeApplicationData})
	f.Add([]byte{3, 2, 40, typeAlert})
	f.Add([]byte{3, 1, 90, typeAlert, 3, 1, 0, typeAlert})
	f.Add([]byte{1, 0})
	f.Add([]byte{2, 'x', 99})
	f.Fuzz(func(t *testing.T, in []byte) {
		d := fuzzDirection(t)
		var wire []byte
		appData := 0
		for len(in) > 0 {
			n := min(int(in[0]), len(in)-1)
			inner := in[1 : 1+n]
			in = in[1+n:]
			wire = append(wire, seal(&d, inner)...)
			appData += len(inner)
		}
		c := readerOver(t, wire)
		data, err := drain(t, c, len(wire)+1)
		if err == nil {
			t.Fatal("drain ended without an error")
		}
		if len(data) > appData {
			t.Fatalf("%d bytes of data from %d bytes of plaintext", len(data), appData)
		}
	})
}

// The handshake reader hands crypto/tls whole records and never a byte of
// the next one, whatever the record sizes and read sizes.
func FuzzHandshakeReader(f *testing.F) {
	f.Add([]byte{22, 3, 1, 0, 3, 1, 2, 3, 23, 3, 3, 0, 1, 9}, uint8(7))
	f.Add([]byte{22, 3, 1, 0, 0, 20, 3, 3, 0, 1, 1}, uint8(1))
	f.Fuzz(func(t *testing.T, wire []byte, readSize uint8) {
		h := newHandshakeConn(&wireConn{r: bytes.NewReader(wire)})
		// Where records end in wire, by the headers.
		ends := map[int]bool{}
		for off := 0; off+recordHeaderLen <= len(wire); {
			off += recordHeaderLen + (int(wire[off+3])<<8 | int(wire[off+4]))
			ends[off] = true
		}
		var got []byte
		buf := make([]byte, int(readSize)+1)
		for i := 0; i <= len(wire)+1; i++ {
			n, err := h.Read(buf)
			start := len(got)
			got = append(got, buf[:n]...)
			for end := range ends {
				if start < end && end < len(got) {
					t.Fatalf("read [%d,%d) crosses the record end %d", start, len(got), end)
				}
			}
			if err != nil {
				break
			}
		}
		if !bytes.Equal(got, wire) {
			t.Fatalf("read %d bytes, not the %d on the wire", len(got), len(wire))
		}
		buf2, start, end := h.leftover()
		if len(buf2) > 0 && start != end {
			t.Fatalf("%d bytes left over after reading everything", end-start)
		}
	})
}
