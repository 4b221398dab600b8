package tlsrec

import (
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xp-bench/xp/internal/aesgcm"
)

// Record-layer sizes and limits (RFC 8446 §5).
const (
	recordHeaderLen = 5
	maxPlaintext    = 1 << 14
	maxCiphertext   = maxPlaintext + 256
	maxRecordWire   = recordHeaderLen + maxCiphertext
	nonceLen        = 12
	tagLen          = 16

	// readBufferSize is the ciphertext read buffer: sixteen full records,
	// so one read system call on a busy socket brings many records.
	readBufferSize = 16 * maxRecordWire
	// flushAt is how much sealed output a Write collects before it writes
	// to the socket: a huge Write goes out in slices of this size rather
	// than growing a buffer of its own size.
	flushAt = 256 << 10

	// maxUselessRecords bounds how many records in a row may carry no
	// application data (empty records, tickets, key updates, user_canceled)
	// before the peer is taken to be wasting our CPU.
	maxUselessRecords = 64
	// maxPostHandshake bounds one post-handshake message (a ticket is at
	// most ~64 KiB).
	maxPostHandshake = 1 << 17

	// closeNotifyTimeout bounds the close_notify (and fatal alert) write.
	closeNotifyTimeout = time.Second

	// defaultKeyUpdateAfter is how many records go out under one key before
	// a KeyUpdate: AES-GCM's safety margin in RFC 8446 §5.5 is 2^24.5
	// records.
	defaultKeyUpdateAfter = 1 << 24
)

// Record content types and post-handshake message types.
const (
	typeAlert           = 21
	typeHandshake       = 22
	typeApplicationData = 23

	msgNewSessionTicket = 4
	msgKeyUpdate        = 24
)

var (
	// ErrWriteClosed is returned by Write after CloseWrite.
	ErrWriteClosed = errors.New("tlsrec: write side closed")
	// ErrSequenceOverflow is returned when a key has sealed or opened 2^64-1
	// records; with KeyUpdates every 2^24 records it is never reached.
	ErrSequenceOverflow = errors.New("tlsrec: record sequence number overflow")
)

// direction is the cipher state of one direction of the connection.
type direction struct {
	suite   suite
	newAEAD func([]byte) (cipher.AEAD, error)
	aead    cipher.AEAD
	secret  []byte
	iv      [nonceLen]byte
	nonce   [nonceLen]byte
	seq     uint64
	updates int // KeyUpdates applied, for tests
}

// setSecret installs a traffic secret (taking ownership of it) and derives
// key and iv from it (RFC 8446 §7.3).
func (d *direction) setSecret(secret []byte) error {
	key, err := expandLabel(d.suite.hash, secret, "key", d.suite.keyLen)
	if err != nil {
		return err
	}
	iv, err := expandLabel(d.suite.hash, secret, "iv", nonceLen)
	if err != nil {
		clear(key)
		return err
	}
	aead, err := d.newAEAD(key)
	clear(key)
	if err != nil {
		clear(iv)
		return fmt.Errorf("tlsrec: record cipher: %w", err)
	}
	if aead.NonceSize() != nonceLen || aead.Overhead() != tagLen {
		clear(iv)
		return fmt.Errorf("tlsrec: record cipher has a %d-byte nonce and %d-byte tag, want %d and %d",
			aead.NonceSize(), aead.Overhead(), nonceLen, tagLen)
	}
	clear(d.secret)
	d.secret = secret
	copy(d.iv[:], iv)
	clear(iv)
	d.aead = aead
	d.seq = 0
	return nil
}

// update moves to the next traffic secret (RFC 8446 §7.2).
func (d *direction) update() error {
	next, err := expandLabel(d.suite.hash, d.secret, "traffic upd", len(d.secret))
	if err != nil {
		return err
	}
	if err := d.setSecret(next); err != nil {
		clear(next)
		return err
	}
	d.updates++
	return nil
}

// nextNonce is the per-record nonce: iv XOR the 64-bit sequence number.
func (d *direction) nextNonce() ([]byte, error) {
	if d.seq == math.MaxUint64 {
		return nil, ErrSequenceOverflow
	}
	d.nonce = d.iv
	var s [8]byte
	binary.BigEndian.PutUint64(s[:], d.seq)
	for i, b := range s {
		d.nonce[nonceLen-8+i] ^= b
	}
	d.seq++
	return d.nonce[:], nil
}

// Conn is a TLS 1.3 connection whose handshake crypto/tls ran and whose
// records this package seals and opens. Read and Write may run
// concurrently on different goroutines.
type Conn struct {
	raw   net.Conn
	state tls.ConnectionState

	rmu     sync.Mutex
	in      direction
	rbuf    []byte // ciphertext read from raw
	r0, r1  int    // not yet opened: rbuf[r0:r1]
	plain   []byte // opened application data not yet returned (in rbuf)
	hs      []byte // a post-handshake message split across records
	useless int    // records in a row without application data
	rerr    error  // sticky read error
	tickets int    // NewSessionTickets ignored, for tests

	wmu  sync.Mutex
	out  direction
	wbuf []byte
	werr error // sticky write error
	// keyUpdateAfter is how many records one write key seals before a
	// KeyUpdate goes out.
	keyUpdateAfter uint64
	// pendingKeyUpdate is set when the peer asked for a KeyUpdate while a
	// Write held the write side; the next record sent carries it first
	// (RFC 8446 §4.6.3 only requires it before our next application data).
	pendingKeyUpdate atomic.Bool
	// writing is set while a write to raw is under way, for Close.
	writing atomic.Bool
	closed  atomic.Bool
}

var _ net.Conn = (*Conn)(nil)

// ConnectionState is the state crypto/tls reported at the end of the
// handshake (version, cipher suite, peer certificates, ALPN...).
func (c *Conn) ConnectionState() tls.ConnectionState { return c.state }

// NetConn is the connection the records travel on.
func (c *Conn) NetConn() net.Conn { return c.raw }

// Addresses and deadlines are the socket's. A Read that times out can be
// retried; see Write for writes.

func (c *Conn) LocalAddr() net.Addr                { return c.raw.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr               { return c.raw.RemoteAddr() }
func (c *Conn) SetDeadline(t time.Time) error      { return c.raw.SetDeadline(t) }
func (c *Conn) SetReadDeadline(t time.Time) error  { return c.raw.SetReadDeadline(t) }
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// Read reads application data. It opens each record straight into p when
// the record fits, and returns the data of as many records as are already
// buffered and fit; a record larger than what is left of p is opened in
// place and served to the following Reads. It returns io.EOF after the
// peer's close_notify (or a clean end of the stream at a record boundary),
// *RemoteAlertError after another alert and *ProtocolError when a record is
// Expect tells the underlying connection, when it has an Expect method,
// how many more bytes its reader is sure to receive: n bytes of
// application data are still to be read through this Conn (0 when done),
// less what it holds already (opened data, and records read but not yet
// opened, which open to at most their size), so the rest comes as at
// least that much ciphertext. The reading goroutine calls it between
// reads.
func (c *Conn) Expect(n int) {
	e, ok := c.raw.(interface{ Expect(int) })
	if !ok {
		return
	}
	c.rmu.Lock()
	if n > 0 {
		n -= len(c.plain) + c.r1 - c.r0
	}
	c.rmu.Unlock()
	e.Expect(max(n, 0))
}

// malformed or fails authentication; it never returns unauthenticated
// bytes.
func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	if len(c.plain) > 0 {
		n = copy(p, c.plain)
		c.plain = c.plain[n:]
		if len(c.plain) > 0 || n == len(p) {
			return n, nil
		}
	}
	for n < len(p) {
		if c.rerr != nil {
			break
		}
		ok := c.haveRecord()
		if c.rerr != nil {
			break
		}
		if !ok {
			if n > 0 {
				return n, nil
			}
			if err := c.fill(); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					return 0, err // the record is still whole in rbuf
				}
				c.rerr = err
			}
			continue
		}
		n += c.readRecord(p[n:])
		if len(c.plain) > 0 {
			return n, nil
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, c.rerr
}

// haveRecord reports whether a whole record is buffered, checking its
// header as soon as it is there.
func (c *Conn) haveRecord() bool {
	avail := c.r1 - c.r0
	if avail < recordHeaderLen {
		return false
	}
	hdr := c.rbuf[c.r0 : c.r0+recordHeaderLen]
	if hdr[0] != typeApplicationData {
		c.fail(AlertUnexpectedMessage, fmt.Sprintf("unexpected record type %d", hdr[0]))
		return false
	}
	length := int(binary.BigEndian.Uint16(hdr[3:]))
	if length > maxCiphertext {
		c.fail(AlertRecordOverflow, fmt.Sprintf("record of %d bytes", length))
		return false
	}
	if length < tagLen+1 {
		c.fail(AlertDecodeError, fmt.Sprintf("record of %d bytes", length))
		return false
	}
	return avail >= recordHeaderLen+length
}

// fill reads from raw into rbuf once; there is no opened data left in it.
// The partial record at the end moves to the front first (less than one
// record's copy), so every read has nearly the whole buffer to fill.
func (c *Conn) fill() error {
	if c.r0 > 0 {
		c.r1 = copy(c.rbuf, c.rbuf[c.r0:c.r1])
		c.r0 = 0
	}
	n, err := c.raw.Read(c.rbuf[c.r1:])
	c.r1 += n
	if n > 0 || err == nil {
		return nil // an error with data comes back on the next read
	}
	if err == io.EOF && c.r1 > c.r0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readRecord opens the whole record at rbuf[r0:] and acts on it. It
// returns how many bytes of application data it put in p.
func (c *Conn) readRecord(p []byte) int {
	hdr := c.rbuf[c.r0 : c.r0+recordHeaderLen]
	length := int(binary.BigEndian.Uint16(hdr[3:]))
	body := c.rbuf[c.r0+recordHeaderLen : c.r0+recordHeaderLen+length]
	c.r0 += recordHeaderLen + length

	inner := length - tagLen
	direct := len(p) >= inner
	dst := body[:0]
	if direct {
		dst = p[:0]
	}
	nonce, err := c.in.nextNonce()
	if err != nil {
		c.fail(AlertInternalError, err.Error())
		return 0
	}
	pt, err := c.in.aead.Open(dst, nonce, body, hdr)
	if err != nil {
		c.fail(AlertBadRecordMAC, "record failed authentication")
		return 0
	}
	i := len(pt) - 1
	for i >= 0 && pt[i] == 0 {
		i--
	}
	if i < 0 {
		c.fail(AlertUnexpectedMessage, "record without a content type")
		return 0
	}
	typ, content := pt[i], pt[:i]
	if len(content) > maxPlaintext {
		c.fail(AlertRecordOverflow, fmt.Sprintf("record with %d bytes of content", len(content)))
		return 0
	}
	switch typ {
	case typeApplicationData:
		if len(c.hs) > 0 {
			c.fail(AlertUnexpectedMessage, "application data inside a handshake message")
			return 0
		}
		if len(content) == 0 {
			c.uselessRecord()
			return 0
		}
		c.useless = 0
		if direct {
			return len(content)
		}
		k := copy(p, content)
		c.plain = content[k:]
		return k
	case typeHandshake:
		c.handshakeRecord(content)
	case typeAlert:
		c.alertRecord(content)
	default:
		c.fail(AlertUnexpectedMessage, fmt.Sprintf("record of content type %d", typ))
	}
	return 0
}

func (c *Conn) uselessRecord() {
	c.useless++
	if c.useless > maxUselessRecords {
		c.fail(AlertUnexpectedMessage, "too many records without application data")
	}
}

func (c *Conn) alertRecord(content []byte) {
	if len(c.hs) > 0 {
		c.fail(AlertUnexpectedMessage, "alert inside a handshake message")
		return
	}
	if len(content) != 2 {
		c.fail(AlertDecodeError, "malformed alert")
		return
	}
	switch a := Alert(content[1]); a {
	case AlertCloseNotify:
		c.rerr = io.EOF
	case AlertUserCanceled:
		// RFC 8446 §6.1: a close_notify follows.
		c.uselessRecord()
	default:
		c.rerr = &RemoteAlertError{Alert: a}
		c.closeWrites(c.rerr)
	}
}

// handshakeRecord handles post-handshake messages: tickets are ignored
// (this package does not resume sessions), KeyUpdate moves to the next
// read key and, when asked, answers with ours.
func (c *Conn) handshakeRecord(content []byte) {
	if len(content) == 0 {
		c.fail(AlertUnexpectedMessage, "empty handshake record")
		return
	}
	if len(c.hs)+len(content) > maxPostHandshake {
		c.fail(AlertUnexpectedMessage, "post-handshake message too long")
		return
	}
	c.hs = append(c.hs, content...)
	for len(c.hs) >= 4 {
		typ := c.hs[0]
		length := int(c.hs[1])<<16 | int(c.hs[2])<<8 | int(c.hs[3])
		if 4+length > maxPostHandshake {
			c.fail(AlertUnexpectedMessage, "post-handshake message too long")
			return
		}
		if len(c.hs) < 4+length {
			break
		}
		body, rest := c.hs[4:4+length], c.hs[4+length:]
		switch typ {
		case msgNewSessionTicket:
			c.tickets++
		case msgKeyUpdate:
			if len(rest) > 0 {
				c.fail(AlertUnexpectedMessage, "KeyUpdate not at the end of its record")
				return
			}
			if length != 1 || body[0] > 1 {
				c.fail(AlertDecodeError, "malformed KeyUpdate")
				return
			}
			if err := c.in.update(); err != nil {
				c.fail(AlertInternalError, err.Error())
				return
			}
			if body[0] == 1 {
				c.answerKeyUpdate()
			}
		default:
			c.fail(AlertUnexpectedMessage, fmt.Sprintf("post-handshake message of type %d", typ))
			return
		}
		c.hs = rest
	}
	if len(c.hs) == 0 {
		c.hs = nil
	}
	c.uselessRecord()
}

// answerKeyUpdate sends our KeyUpdate now if the write side is free, and
// otherwise leaves it to the Write holding it, so a Read never waits
// behind a Write blocked on a peer that is not reading.
func (c *Conn) answerKeyUpdate() {
	c.pendingKeyUpdate.Store(true)
	if !c.wmu.TryLock() {
		return
	}
	defer c.wmu.Unlock()
	if c.writeErr() != nil || !c.pendingKeyUpdate.Swap(false) {
		return
	}
	if err := c.appendKeyUpdate(false); err == nil {
		_ = c.flush()
	}
}

// fail records a protocol error as the sticky read error and tells the
// peer with a fatal alert (if the write side is free).
func (c *Conn) fail(a Alert, msg string) {
	err := &ProtocolError{Alert: a, Msg: msg}
	c.rerr = err
	if !c.wmu.TryLock() {
		return
	}
	defer c.wmu.Unlock()
	if c.writeErr() == nil {
		_ = c.raw.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
		if c.appendRecord(typeAlert, []byte{2, byte(a)}) == nil {
			_ = c.flush()
		}
	}
	c.werr = err
}

// closeWrites makes later Writes fail with err.
func (c *Conn) closeWrites(err error) {
	if !c.wmu.TryLock() {
		return
	}
	if c.werr == nil {
		c.werr = err
	}
	c.wmu.Unlock()
}

func (c *Conn) writeErr() error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	return c.werr
}

// Write seals p into records of up to 16 KiB and writes them to the socket
// in one write call (one per 256 KiB for larger p). A failed socket write,
// a passed deadline included, is permanent: it may have sent part of a
// record. n counts the bytes of the 256 KiB batches written whole.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeErr(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if want := sealedLen(len(p)); cap(c.wbuf) < want && cap(c.wbuf) < flushAt+maxRecordWire {
		c.wbuf = make([]byte, 0, min(want, flushAt+maxRecordWire))
	}
	n, sealed := 0, 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxPlaintext)]
		if err := c.appendRecord(typeApplicationData, chunk); err != nil {
			c.wbuf = c.wbuf[:0]
			return n, err
		}
		p = p[len(chunk):]
		sealed += len(chunk)
		if len(c.wbuf) >= flushAt || len(p) == 0 {
			if err := c.flush(); err != nil {
				return n, err
			}
			n += sealed
			sealed = 0
		}
	}
	return n, nil
}

// sealedLen is the wire size of n bytes of application data.
func sealedLen(n int) int {
	records := (n + maxPlaintext - 1) / maxPlaintext
	return n + records*(recordHeaderLen+1+tagLen)
}

// appendRecord seals content of type typ into a record at the end of
// wbuf; application data first carries a KeyUpdate when one is due.
func (c *Conn) appendRecord(typ byte, content []byte) error {
	if typ == typeApplicationData && (c.pendingKeyUpdate.Load() || c.out.seq >= c.keyUpdateAfter) {
		c.pendingKeyUpdate.Store(false)
		if err := c.appendKeyUpdate(false); err != nil {
			return err
		}
	}
	nonce, err := c.out.nextNonce()
	if err != nil {
		c.werr = err
		return err
	}
	length := len(content) + 1 + tagLen
	off := len(c.wbuf)
	c.wbuf = slices.Grow(c.wbuf, recordHeaderLen+length)
	c.wbuf = append(c.wbuf, typeApplicationData, 3, 3, byte(length>>8), byte(length))
	hdr := c.wbuf[off:]
	if ts, ok := c.out.aead.(aesgcm.TrailerSealer); ok {
		// Sealed from content straight into wbuf, with no copy first.
		c.wbuf = ts.SealTrailer(c.wbuf, nonce, content, typ, hdr)
		return nil
	}
	c.wbuf = append(c.wbuf, content...)
	c.wbuf = append(c.wbuf, typ)
	body := c.wbuf[off+recordHeaderLen:]
	c.out.aead.Seal(body[:0], nonce, body, hdr)
	c.wbuf = c.wbuf[:off+recordHeaderLen+length]
	return nil
}

// appendKeyUpdate appends a KeyUpdate under the current key and moves the
// write side to the next one.
func (c *Conn) appendKeyUpdate(requestPeer bool) error {
	msg := []byte{msgKeyUpdate, 0, 0, 1, 0}
	if requestPeer {
		msg[4] = 1
	}
	if err := c.appendRecord(typeHandshake, msg); err != nil {
		return err
	}
	if err := c.out.update(); err != nil {
		c.werr = err
		return err
	}
	return nil
}

// flush writes wbuf to raw; a failed write leaves a torn record behind, so
// the error sticks.
func (c *Conn) flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	c.writing.Store(true)
	_, err := c.raw.Write(c.wbuf)
	c.writing.Store(false)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		c.werr = err
	}
	return err
}

// KeyUpdate sends a KeyUpdate and moves to the next write key; with
// requestPeer the peer is asked to do the same for its direction (RFC 8446
// §4.6.3). Keys are also updated every 2^24 records without asking.
func (c *Conn) KeyUpdate(requestPeer bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeErr(); err != nil {
		return err
	}
	c.pendingKeyUpdate.Store(false)
	if err := c.appendKeyUpdate(requestPeer); err != nil {
		c.wbuf = c.wbuf[:0]
		return err
	}
	return c.flush()
}

// CloseWrite sends close_notify; the peer reads io.EOF, and this side can
// still read. Like crypto/tls it does not shut the socket's write side.
func (c *Conn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeErr(); err != nil {
		return err
	}
	err := c.sendCloseNotify()
	if c.werr == nil {
		c.werr = ErrWriteClosed
	}
	return err
}

func (c *Conn) sendCloseNotify() error {
	if err := c.appendRecord(typeAlert, []byte{1, byte(AlertCloseNotify)}); err != nil {
		return err
	}
	return c.flush()
}

// Close sends close_notify (waiting at most a second for the socket) and
// closes the socket. While a Write is under way — possibly blocked on a
// peer that stopped reading — it closes the socket at once instead, which
// also ends that Write.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return c.raw.Close()
	}
	if c.writing.Load() || !c.wmu.TryLock() {
		return c.raw.Close()
	}
	if c.werr == nil {
		_ = c.raw.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
		_ = c.sendCloseNotify()
	}
	c.werr = net.ErrClosed
	c.wmu.Unlock()
	return c.raw.Close()
}
