package local

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/kafkaframe"
)

// maxFrame bounds one Kafka frame the front accepts (Kafka's default
// socket.request.max.bytes is 100 MiB).
const maxFrame = 100 << 20

// front is one listener of one mode in front of one kfake broker: it
// terminates the mode's security layer and relays Kafka frames, rewriting
// broker addresses in responses so clients stay on this mode's fronts.
type front struct {
	mode     string
	ln       net.Listener
	upstream string
	tls      *tls.Config
	users    map[string]*credential // non-nil: SASL required
	// addrs maps a kfake broker address to this mode's front for it.
	addrs map[string]hostPort

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

type hostPort struct {
	host string
	port int32
}

func (f *front) addr() string { return f.ln.Addr().String() }

func (f *front) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			f.handle(c)
		}()
	}
}

func (f *front) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *front) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *front) close() {
	f.mu.Lock()
	f.closed = true
	f.ln.Close()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *front) handle(raw net.Conn) {
	c := raw
	if f.tls != nil {
		tc := tls.Server(raw, f.tls)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return
		}
		tc.SetDeadline(time.Time{})
		c = tc
	}
	up, err := net.DialTimeout("tcp", f.upstream, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.conns[up] = struct{}{}
	f.mu.Unlock()
	defer func() { f.mu.Lock(); delete(f.conns, up); f.mu.Unlock() }()

	cr := bufio.NewReaderSize(c, 64<<10)
	ur := bufio.NewReaderSize(up, 64<<10)
	if f.users != nil {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := f.authenticate(c, cr, up, ur); err != nil {
			return
		}
		c.SetDeadline(time.Time{})
	}
	p := &pending{m: map[int32]reqInfo{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.relayResponses(ur, c, p)
		c.Close()
		up.Close()
	}()
	relayRequests(cr, up, p)
	c.Close()
	up.Close()
	<-done
}

// reqInfo is what a response decoder needs from its request.
type reqInfo struct {
	key, version int16
	flexible     bool
}

// pending holds the requests whose responses carry broker addresses.
type pending struct {
	n  atomic.Int32
	mu sync.Mutex
	m  map[int32]reqInfo
}

func (p *pending) put(corr int32, ri reqInfo) {
	p.mu.Lock()
	p.m[corr] = ri
	p.mu.Unlock()
	p.n.Add(1)
}

func (p *pending) take(corr int32) (reqInfo, bool) {
	if p.n.Load() == 0 {
		return reqInfo{}, false
	}
	p.mu.Lock()
	ri, ok := p.m[corr]
	if ok {
		delete(p.m, corr)
	}
	p.mu.Unlock()
	if ok {
		p.n.Add(-1)
	}
	return ri, ok
}

// rewrites reports whether responses to key carry broker endpoints.
func rewrites(key int16) bool {
	return key == int16(kmsg.Metadata) || key == int16(kmsg.FindCoordinator) || key == int16(kmsg.DescribeCluster)
}

// readFrame reads one size-prefixed frame into buf (grown as needed).
func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	return kafkaframe.ReadFrame(r, buf, 4, maxFrame)
}

func writeFrame(w *bufio.Writer, frame []byte) error {
	var sz [4]byte
	binary.BigEndian.PutUint32(sz[:], uint32(len(frame)))
	w.Write(sz[:])
	_, err := w.Write(frame)
	return err
}

func relayRequests(r *bufio.Reader, up net.Conn, p *pending) {
	w := bufio.NewWriterSize(up, 64<<10)
	var buf []byte
	var err error
	for {
		if buf, err = readFrame(r, buf); err != nil {
			return
		}
		h, ok := kafkaframe.ParseRequestPrefix(buf)
		if !ok {
			return
		}
		if rewrites(h.Key) {
			req := kmsg.RequestForKey(h.Key)
			req.SetVersion(h.Version)
			p.put(h.CorrID, reqInfo{key: h.Key, version: h.Version, flexible: req.IsFlexible()})
		}
		if err := writeFrame(w, buf); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

func (f *front) relayResponses(r *bufio.Reader, c net.Conn, p *pending) {
	w := bufio.NewWriterSize(c, 64<<10)
	var buf, out []byte
	var err error
	for {
		if buf, err = readFrame(r, buf); err != nil {
			return
		}
		frame := buf
		if ri, ok := p.take(int32(binary.BigEndian.Uint32(buf))); ok {
			if out, err = f.rewrite(out[:0], buf, ri); err != nil {
				return
			}
			frame = out
		}
		if err := writeFrame(w, frame); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// rewrite decodes a response frame (correlation id, header tags, body) and
// points every broker endpoint at this mode's fronts.
func (f *front) rewrite(out, frame []byte, ri reqInfo) ([]byte, error) {
	hdr := 4
	if ri.flexible {
		n, err := kafkaframe.SkipTags(frame[hdr:])
		if err != nil {
			return nil, err
		}
		hdr += n
	}
	resp := kmsg.ResponseForKey(ri.key)
	resp.SetVersion(ri.version)
	if err := resp.ReadFrom(frame[hdr:]); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(ri.key), err)
	}
	fix := func(host *string, port *int32) {
		if hp, ok := f.addrs[net.JoinHostPort(*host, strconv.Itoa(int(*port)))]; ok {
			*host, *port = hp.host, hp.port
		}
	}
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			fix(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	case *kmsg.FindCoordinatorResponse:
		if r.Host != "" {
			fix(&r.Host, &r.Port)
		}
		for i := range r.Coordinators {
			fix(&r.Coordinators[i].Host, &r.Coordinators[i].Port)
		}
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			fix(&r.Brokers[i].Host, &r.Brokers[i].Port)
		}
	}
	out = append(out, frame[:hdr]...)
	return resp.AppendTo(out), nil
}

// authenticate runs the SASL exchange before any frame reaches the broker:
// ApiVersions is relayed (clients ask before SASL), SaslHandshake and
// SaslAuthenticate are answered here, anything else closes the connection
// as a Kafka broker does.
func (f *front) authenticate(c net.Conn, cr *bufio.Reader, up net.Conn, ur *bufio.Reader) error {
	cw := bufio.NewWriter(c)
	uw := bufio.NewWriter(up)
	var sess saslSession
	var buf []byte
	var err error
	for {
		if buf, err = readFrame(cr, buf); err != nil {
			return err
		}
		h, ok := kafkaframe.ParseRequestPrefix(buf)
		if !ok {
			return errors.New("short request")
		}
		key, ver, corr := h.Key, h.Version, h.CorrID
		switch key {
		case int16(kmsg.ApiVersions):
			if err := relayAPIVersions(buf, ver, uw, ur, cw); err != nil {
				return err
			}
			continue
		case int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate):
		default:
			return fmt.Errorf("%s before authentication", kmsg.NameForKey(key))
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(ver)
		body, err := requestBody(buf, req.IsFlexible())
		if err != nil {
			return err
		}
		if err := req.ReadFrom(body); err != nil {
			return err
		}
		var resp kmsg.Response
		var fail error
		done := false
		switch r := req.(type) {
		case *kmsg.SASLHandshakeRequest:
			resp, fail = f.handshake(r, ver, &sess)
		case *kmsg.SASLAuthenticateRequest:
			resp, done, fail = saslAuthenticate(r, sess)
		}
		if err := writeResponse(cw, corr, ver, resp); err != nil {
			return err
		}
		if fail != nil {
			return fail
		}
		if done {
			return nil
		}
	}
}

// relayAPIVersions relays an ApiVersions request, frame, of version ver to
// the broker and its response, advertising SASL, back to the client.
func relayAPIVersions(frame []byte, ver int16, uw *bufio.Writer, ur *bufio.Reader, cw *bufio.Writer) error {
	if err := writeFrame(uw, frame); err != nil {
		return err
	}
	if err := uw.Flush(); err != nil {
		return err
	}
	resp, err := readFrame(ur, nil)
	if err != nil {
		return err
	}
	resp = advertiseSASL(resp, ver)
	if err := writeFrame(cw, resp); err != nil {
		return err
	}
	return cw.Flush()
}

// handshake answers a SaslHandshake of version ver, starting *sess on a
// mechanism the front knows; fail says why the client is refused.
func (f *front) handshake(r *kmsg.SASLHandshakeRequest, ver int16, sess *saslSession) (resp kmsg.Response, fail error) {
	hr := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	hr.SupportedMechanisms = []string{MechPlain, MechScramSHA256, MechScramSHA512}
	if ver < 1 {
		// v0 sends raw tokens outside Kafka framing; nobody
		// current uses it.
		hr.ErrorCode = kerr.UnsupportedVersion.Code
		fail = errors.New("SaslHandshake v0 is not supported")
	} else if s, ok := newSASLSession(r.Mechanism, f.users); ok {
		*sess = s
	} else {
		hr.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		fail = fmt.Errorf("unsupported mechanism %q", r.Mechanism)
	}
	return hr, fail
}

// saslAuthenticate answers a SaslAuthenticate with the next step of sess;
// done when the client is authenticated, fail when it is refused.
func saslAuthenticate(r *kmsg.SASLAuthenticateRequest, sess saslSession) (resp kmsg.Response, done bool, fail error) {
	ar := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if sess == nil {
		ar.ErrorCode = kerr.IllegalSaslState.Code
		fail = errors.New("SaslAuthenticate before SaslHandshake")
	} else {
		out, ok, err := sess.step(r.SASLAuthBytes)
		if err != nil {
			ar.ErrorCode = kerr.SaslAuthenticationFailed.Code
			msg := err.Error()
			ar.ErrorMessage = &msg
			fail = err
		} else {
			ar.SASLAuthBytes = out
			done = ok
		}
	}
	return ar, done, fail
}

// writeResponse writes resp, of version ver, to correlation id corr and
// flushes it to the client.
func writeResponse(cw *bufio.Writer, corr int32, ver int16, resp kmsg.Response) error {
	resp.SetVersion(ver)
	frame := binary.BigEndian.AppendUint32(nil, uint32(corr))
	if resp.IsFlexible() {
		frame = append(frame, 0)
	}
	frame = resp.AppendTo(frame)
	if err := writeFrame(cw, frame); err != nil {
		return err
	}
	return cw.Flush()
}

// requestBody skips a request header (key, version, correlation id, client
// id, and tagged fields in flexible versions).
func requestBody(frame []byte, flexible bool) ([]byte, error) {
	n, err := kafkaframe.RequestHeaderLen(frame, flexible)
	if err != nil {
		return nil, fmt.Errorf("request header: %w", err)
	}
	return frame[n:], nil
}

// advertiseSASL sets the SaslHandshake and SaslAuthenticate ranges of an
// ApiVersions response to what the front serves. A response that does not decode passes unchanged.
func advertiseSASL(frame []byte, ver int16) []byte {
	if len(frame) < 4 {
		return frame
	}
	resp := new(kmsg.ApiVersionsResponse)
	resp.SetVersion(ver)
	if err := resp.ReadFrom(frame[4:]); err != nil || resp.ErrorCode != 0 {
		return frame
	}
	// Real brokers list SaslHandshake 0..1; librdkafka needs version 0 in
	// the range to believe the broker speaks SASL at all (it then uses v1).
	want := map[int16]int16{int16(kmsg.SASLHandshake): 1, int16(kmsg.SASLAuthenticate): 2}
	kept := resp.ApiKeys[:0]
	for _, k := range resp.ApiKeys {
		if _, ok := want[k.ApiKey]; !ok {
			kept = append(kept, k)
		}
	}
	resp.ApiKeys = kept
	for _, key := range []int16{int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate)} {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, 0, want[key]
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp.AppendTo(append([]byte(nil), frame[:4]...))
}
