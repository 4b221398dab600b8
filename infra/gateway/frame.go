package gateway

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/kafkaframe"
)

// A Kafka frame is a big-endian int32 size followed by that many bytes. A
// request starts with the header api_key int16, api_version int16,
// correlation_id int32, client_id nullable string and, for flexible
// versions, tagged fields; a response starts with correlation_id int32 and,
// for flexible versions (except ApiVersions), tagged fields.
const (
	sizeLen = 4
	// minRequestLen is api key, version, correlation id and the client id
	// length: the smallest request body any version allows.
	minRequestLen = 2 + 2 + 4 + 2
	// minResponseLen is the correlation id.
	minResponseLen = 4
	// requestPrefixLen is what the gateway needs of every request to route
	// it: size, api key, version and correlation id.
	requestPrefixLen = sizeLen + 8
)

// FrameError is a frame the gateway refuses: oversize, undersize or
// malformed. The connection it arrived on is closed.
type FrameError struct {
	Reason string
}

func (e *FrameError) Error() string { return "bad frame: " + e.Reason }

// errTruncated: the bytes end inside a header (kafkaframe's).
var errTruncated = kafkaframe.ErrTruncated

// checkFrameSize reports a size outside [min, max] as a FrameError.
func checkFrameSize(size int32, min, max int) error {
	var se *kafkaframe.SizeError
	if err := kafkaframe.CheckSize(size, min, max); errors.As(err, &se) {
		reason := se.Error()
		if int64(size) > int64(max) {
			reason += " (limits.max_frame_bytes)"
		}
		return &FrameError{Reason: reason}
	}
	return nil
}

// requestHeader is the routed part of a request header.
type requestHeader = kafkaframe.RequestHeader

// parseRequestPrefix reads the fixed part of a request header from the body
// (the frame without its size).
func parseRequestPrefix(body []byte) (requestHeader, error) {
	h, ok := kafkaframe.ParseRequestPrefix(body)
	if !ok {
		return requestHeader{}, &FrameError{Reason: "request shorter than its header"}
	}
	return h, nil
}

// requestHeaderLen returns the length of the whole request header (prefix,
// client id and, when flexible, tagged fields) at the start of body. It
// returns errTruncated when body ends inside the header, and a FrameError
// when the header is malformed.
func requestHeaderLen(body []byte, h requestHeader) (int, error) {
	n, err := kafkaframe.RequestHeaderLen(body, requestFlexible(h.Key, h.Version))
	return n, frameError(err)
}

// frameError turns kafkaframe's malformed-header errors into FrameErrors;
// others (errTruncated) pass unchanged.
func frameError(err error) error {
	var m *kafkaframe.MalformedError
	if errors.As(err, &m) {
		return &FrameError{Reason: m.Reason}
	}
	return err
}

// responseHeaderLen is the length of a response header for a request of
// key and version: the correlation id plus, when flexible, tagged fields.
// ApiVersions responses always use header v0 so clients can read them
// before they know what the broker supports.
func responseHeaderLen(body []byte, key, version int16) (int, error) {
	if len(body) < 4 {
		return 0, &FrameError{Reason: "response shorter than its header"}
	}
	if key == 18 || !responseFlexible(key, version) {
		return 4, nil
	}
	m, err := skipTags(body[4:])
	if err != nil {
		if errors.Is(err, errTruncated) {
			return 0, &FrameError{Reason: "response header tags truncated"}
		}
		return 0, err
	}
	return 4 + m, nil
}

// uvarint reads an unsigned varint; n is 0 when b ends inside it and
// negative on overflow.
func uvarint(b []byte) (uint64, int) { return binary.Uvarint(b) }

// skipTags returns the length of a tagged-field section at the start of b:
// errTruncated when b ends inside it, a FrameError when it is malformed.
func skipTags(b []byte) (int, error) {
	n, err := kafkaframe.SkipTags(b)
	return n, frameError(err)
}

// produceAcks reads the acks field of a produce request body (the bytes
// after the request header). acks=0 produce requests get no response.
func produceAcks(body []byte, version int16) (int16, error) {
	n := 0
	switch {
	case version >= 9: // compact nullable transactional id
		l, m := uvarint(body)
		if m == 0 {
			return 0, errTruncated
		}
		if m < 0 || l > uint64(len(body)) {
			return 0, &FrameError{Reason: "bad produce transactional id"}
		}
		n = m
		if l > 0 {
			n += int(l - 1)
		}
	case version >= 3: // nullable transactional id
		if len(body) < 2 {
			return 0, errTruncated
		}
		l := int(int16(binary.BigEndian.Uint16(body)))
		if l < -1 {
			return 0, &FrameError{Reason: "bad produce transactional id"}
		}
		n = 2
		if l > 0 {
			n += l
		}
	}
	if len(body) < n+2 {
		return 0, errTruncated
	}
	return int16(binary.BigEndian.Uint16(body[n:])), nil
}

// apiTable holds, per API key, the first flexible request and response
// versions (-1 when the key has none or kmsg does not know it) and the
// newest version kmsg decodes.
type apiTable struct{ req, resp, max [kmsg.MaxKey + 1]int16 }

var flexibility = sync.OnceValue(func() (t apiTable) {
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		t.req[k], t.resp[k], t.max[k] = -1, -1, -1
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		t.max[k] = req.MaxVersion()
		resp := req.ResponseKind()
		for v := int16(0); v <= req.MaxVersion(); v++ {
			req.SetVersion(v)
			if t.req[k] < 0 && req.IsFlexible() {
				t.req[k] = v
			}
			resp.SetVersion(v)
			if t.resp[k] < 0 && resp.IsFlexible() {
				t.resp[k] = v
			}
		}
	}
	return t
})

func requestFlexible(key, version int16) bool {
	if key < 0 || key > kmsg.MaxKey {
		return false
	}
	f := flexibility().req[key]
	return f >= 0 && version >= f
}

// kmsgMax is the newest version of key kmsg decodes, -1 if none.
func kmsgMax(key int16) int16 {
	if key < 0 || key > kmsg.MaxKey {
		return -1
	}
	return flexibility().max[key]
}

func responseFlexible(key, version int16) bool {
	if key < 0 || key > kmsg.MaxKey {
		return false
	}
	f := flexibility().resp[key]
	return f >= 0 && version >= f
}

// copyFrame streams n bytes from src to dst, without holding the frame
// anywhere else. What src has buffered is copied from its buffer; beyond
// that, a remainder of at least directRead bytes is read from raw (the
// reader under src, which then has nothing buffered) straight into dst's
// buffer, one copy fewer. The read stops at the frame's end, so the frames
// after it are read through src as before.
func copyFrame(dst *relayWriter, src *bufio.Reader, raw io.Reader, n int) error {
	e := expect(raw, n-src.Buffered())
	err := copyFrameBody(dst, src, raw, n)
	if e != nil {
		e.Expect(0)
	}
	return err
}

// expecter is a connection its reader can tell how many more bytes it is
// sure to receive, so that it waits for them in fewer, larger pieces
// (sysConn, and tlsrec.Conn over one).
type expecter interface{ Expect(n int) }

// expectMin is the smallest rest of a frame worth telling a connection
// about: about one loopback segment.
const expectMin = 64 << 10

// expect tells raw, if it is an expecter and n is at least expectMin, that
// n more bytes of a frame are coming, and returns it if it did (the caller
// then clears it with Expect(0) once the frame is read), else nil.
func expect(raw io.Reader, n int) expecter {
	if n < expectMin {
		return nil
	}
	e, ok := raw.(expecter)
	if !ok {
		return nil
	}
	e.Expect(n)
	return e
}

func copyFrameBody(dst *relayWriter, src *bufio.Reader, raw io.Reader, n int) error {
	for n > 0 {
		if src.Buffered() == 0 {
			if n >= directRead {
				m, err := dst.readFrom(raw, n)
				n -= m
				if err != nil && n > 0 {
					return noEOF(err)
				}
				if m == 0 && err == nil {
					return io.ErrNoProgress
				}
				// A read error at the frame's end comes back
				// with the next read; the frame goes out first.
				continue
			}
			if _, err := src.Peek(1); err != nil {
				return noEOF(err)
			}
		}
		chunk := min(src.Buffered(), n)
		p, _ := src.Peek(chunk)
		if _, err := dst.Write(p); err != nil {
			return err
		}
		_, _ = src.Discard(chunk)
		n -= chunk
	}
	return nil
}

// directRead is the smallest frame remainder copyFrame reads past the read
// buffer: smaller ones fill the read buffer, which may then hold the next
// frames too.
const directRead = 8 << 10

// noEOF turns an EOF in the middle of a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// peekSize reads the size of the next frame without consuming it.
func peekSize(r *bufio.Reader) (int32, error) {
	b, err := r.Peek(sizeLen)
	if err != nil {
		if len(b) > 0 {
			return 0, io.ErrUnexpectedEOF
		}
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// buffers pools frame buffers in size classes so that large fetches do not
// pin large buffers for small requests.
type bufPool struct {
	classes [4]sync.Pool
}

var bufClasses = [4]int{4 << 10, 64 << 10, 1 << 20, 16 << 20}

var frameBufs bufPool

// get returns a buffer of length n.
func (p *bufPool) get(n int) *[]byte {
	for i, c := range bufClasses {
		if n <= c {
			if b, ok := p.classes[i].Get().(*[]byte); ok {
				*b = (*b)[:n]
				return b
			}
			b := make([]byte, n, c)
			return &b
		}
	}
	b := make([]byte, n)
	return &b
}

func (p *bufPool) put(b *[]byte) {
	c := cap(*b)
	for i, cc := range bufClasses {
		if c == cc {
			p.classes[i].Put(b)
			return
		}
	}
}
