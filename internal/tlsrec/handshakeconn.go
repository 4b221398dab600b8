package tlsrec

import (
	"encoding/binary"
	"net"
)

// handshakeConn is what crypto/tls reads the handshake through. It reads
// from the socket as much as one read call brings, but hands crypto/tls no
// byte past the end of the TLS record crypto/tls is in, so when the
// handshake is over crypto/tls holds nothing that was sent under the
// application keys: whatever came after stays in buf, and the record layer
// starts from it.
type handshakeConn struct {
	net.Conn
	buf        []byte
	start, end int // buffered bytes not yet handed to crypto/tls: buf[start:end]

	hdr  [recordHeaderLen]byte
	nhdr int // header bytes of the current record handed over so far
	left int // body bytes of the current record not yet handed over

	// passthrough is set once the handshake is over and crypto/tls keeps
	// the connection (TLS 1.2, ChaCha20): reads then drain buf and go
	// straight to the socket.
	passthrough bool

	// watching is set from the moment crypto/tls logs this side's
	// application traffic secret to the end of the handshake: what it
	// writes meanwhile is kept in sent (up to maxWatched bytes; beyond,
	// overflow), for the check that none of it is under that secret.
	watching bool
	sent     []byte
	overflow bool
}

// maxWatched bounds the bytes kept by handshakeConn.Write while watching:
// a handshake's last flight (certificates included) is a few KiB.
const maxWatched = 256 << 10

func (h *handshakeConn) Write(p []byte) (int, error) {
	if h.watching {
		if len(h.sent)+len(p) > maxWatched {
			h.overflow = true
		} else {
			h.sent = append(h.sent, p...)
		}
	}
	return h.Conn.Write(p)
}

func newHandshakeConn(raw net.Conn) *handshakeConn {
	return &handshakeConn{Conn: raw, buf: make([]byte, readBufferSize)}
}

func (h *handshakeConn) Read(p []byte) (int, error) {
	if h.passthrough {
		if h.start < h.end {
			n := copy(p, h.buf[h.start:h.end])
			h.start += n
			if h.start == h.end {
				h.buf = nil
			}
			return n, nil
		}
		return h.Conn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if h.start == h.end {
		n, err := h.Conn.Read(h.buf)
		if n == 0 {
			return 0, err
		}
		// An error with data comes back from the socket on the next read.
		h.start, h.end = 0, n
	}
	avail := h.buf[h.start:h.end]
	if h.nhdr < recordHeaderLen {
		k := min(recordHeaderLen-h.nhdr, len(avail), len(p))
		copy(h.hdr[h.nhdr:], avail[:k])
		copy(p, avail[:k])
		h.nhdr += k
		h.start += k
		if h.nhdr == recordHeaderLen {
			h.left = int(binary.BigEndian.Uint16(h.hdr[3:]))
			if h.left == 0 {
				h.nhdr = 0
			}
		}
		return k, nil
	}
	k := copy(p, avail[:min(len(avail), h.left)])
	h.left -= k
	h.start += k
	if h.left == 0 {
		h.nhdr = 0
	}
	return k, nil
}

// keepTLS switches to passthrough for a connection crypto/tls keeps.
func (h *handshakeConn) keepTLS() {
	h.passthrough = true
	if h.start == h.end {
		h.buf = nil
	}
}

// leftover hands the bytes read past the handshake to the record layer,
// with the buffer holding them.
func (h *handshakeConn) leftover() (buf []byte, start, end int) {
	buf, start, end = h.buf, h.start, h.end
	h.buf, h.start, h.end = nil, 0, 0
	return buf, start, end
}
