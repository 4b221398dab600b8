package gateway

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// proxyConn relays one client connection to its broker connection: one
// goroutine reads requests and writes them upstream, one reads responses
// and writes them to the client. The bounded in-flight queue between them
// carries, in order, what each response needs (its API key and version) and
// applies backpressure: when it is full the gateway stops reading the
// client.
type proxyConn struct {
	g        *Gateway
	log      *slog.Logger
	client   net.Conn
	upstream net.Conn
	cr       *bufio.Reader
	cw       *relayWriter
	ur       *bufio.Reader
	uw       *relayWriter
	inflight chan pending
	done     chan struct{}
	once     sync.Once
	ctx      context.Context
	cancel   context.CancelFunc

	// Each direction's filter calls get their own context carrying the
	// scratch buffers they may fill until the message is sent, and a
	// splicer to send it with (see splice.go). origs and codes keep a
	// decoded message's record sets and partition error codes as they
	// came, to tell what the filters changed.
	reqCtx, respCtx         context.Context
	reqScratch, respScratch scratch
	reqSplice, respSplice   splicer
	reqOrigs, respOrigs     [][]byte
	reqNows, respNows       [][]byte
	respCodes               []int16

	// saslAccepted carries the broker's answer to a v0 handshake to the
	// request side; saslCorr numbers the SaslAuthenticate requests the
	// gateway makes for it (negative, clear of client ids in logs).
	saslAccepted chan bool
	saslCorr     int32
}

// pending is a request awaiting its response.
type pending struct {
	key, version int16
	corr         int32
	// synthetic is a whole response frame the gateway answers itself (a
	// produce a filter refused). The broker is sent an ApiVersions v0
	// request with the same correlation id instead, and its answer is
	// dropped: responses stay in order and the response loop always
	// reads the broker, so it notices a broker that goes away at once.
	synthetic *[]byte
	// fetch is the decoded fetch request, when filters need it.
	fetch *kmsg.FetchRequest
	// failed are produce partitions a filter refused, to merge into the
	// broker's response.
	failed []PartitionError
	// saslV0 marks a SaslHandshake v0 relayed as v1; rawAuth a
	// SaslAuthenticate the gateway wrapped around a raw v0 token.
	saslV0, rawAuth bool
}

func newProxyConn(g *Gateway, client, upstream net.Conn, log *slog.Logger) *proxyConn {
	size := g.cfg.Limits.BufferBytes
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), topicNamesKey{}, topicNamer(g)))
	p := &proxyConn{
		g:            g,
		log:          log,
		client:       client,
		upstream:     upstream,
		cr:           bufio.NewReaderSize(client, size),
		cw:           newRelayWriter(client, size, &g.metrics.latency[dirResponse]),
		ur:           bufio.NewReaderSize(upstream, size),
		uw:           newRelayWriter(upstream, size, &g.metrics.latency[dirRequest]),
		inflight:     make(chan pending, g.cfg.Limits.MaxInFlight),
		done:         make(chan struct{}),
		ctx:          ctx,
		saslAccepted: make(chan bool, 1),
		cancel:       cancel,
	}
	p.reqCtx = context.WithValue(ctx, scratchKey{}, &p.reqScratch)
	p.respCtx = context.WithValue(ctx, scratchKey{}, &p.respScratch)
	return p
}

func (p *proxyConn) close() {
	p.once.Do(func() {
		close(p.done)
		p.cancel()
		// The sockets first: a relay loop or the stall timer may be
		// waiting in a write to a peer that does not read, holding its
		// writer, which stop needs.
		p.client.Close()
		p.upstream.Close()
		p.uw.stop()
		p.cw.stop()
	})
}

// connError records which side failed, for logs and metrics.
type connError struct {
	reason int
	err    error
}

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// run relays until either side closes and returns the close reason.
func (p *proxyConn) run() int {
	errc := make(chan error, 2)
	go func() { errc <- p.responses() }()
	go func() { errc <- p.requests() }()
	// The first loop to stop explains the close; the other then sees a
	// closed socket.
	err := <-errc
	p.close()
	<-errc
	var ce *connError
	if !errors.As(err, &ce) {
		if err != nil && !isClosed(err) {
			p.log.Debug("connection closed", "error", err)
		}
		return closeNormal
	}
	switch ce.reason {
	case closeBadFrame:
		p.log.Warn("closing connection: refused frame", "error", ce.err)
	case closeUpstreamLost:
		p.log.Warn("closing connection: upstream broker connection failed; the client will reconnect", "error", ce.err)
	case closeSASLFailed:
		p.log.Info("closing connection", "error", ce.err)
	}
	return ce.reason
}

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}

func badFrame(err error) error { return &connError{reason: closeBadFrame, err: err} }

func upstreamLost(err error) error {
	if err == nil {
		return nil
	}
	return &connError{reason: closeUpstreamLost, err: err}
}

// requests relays client requests upstream.
func (p *proxyConn) requests() error {
	maxFrame := p.g.cfg.Limits.MaxFrameBytes
	filtered := len(p.g.cfg.Filters) > 0
	for {
		size, err := peekSize(p.cr)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if err := checkFrameSize(size, minRequestLen, maxFrame); err != nil {
			return badFrame(err)
		}
		pre, err := p.cr.Peek(requestPrefixLen)
		if err != nil {
			return noEOF(err)
		}
		h, _ := parseRequestPrefix(pre[sizeLen:])
		if !requestAllowed(h.Key, h.Version) {
			return badFrame(&FrameError{Reason: fmt.Sprintf("%s v%d is not offered by the gateway (see its ApiVersions answer)", apiName(h.Key), h.Version)})
		}
		frameLen := sizeLen + int(size)
		p.g.metrics.request(h.Key, frameLen)
		switch {
		case h.Key == keyProduce && filtered:
			err = p.filteredProduce(h, frameLen)
		case h.Key == keyFetch && filtered:
			err = p.decodedFetchRequest(h, frameLen)
		case h.Key == keySASLHandshake && h.Version == 0:
			err = p.saslHandshakeV0(h, frameLen)
		default:
			err = p.relayRequest(h, frameLen)
		}
		if err != nil {
			return err
		}
		if err := p.afterFrame(p.cr, p.uw, upstreamLost); err != nil {
			return err
		}
	}
}

// afterFrame decides, after a frame was relayed from r to w, whether to
// flush now: when nothing more is buffered to read (the next read may
// block), or when many frames wait. When the next frame is only partly
// buffered, a flush is armed for the case the rest does not come (see
// relayWriter).
func (p *proxyConn) afterFrame(r *bufio.Reader, w *relayWriter, wrap func(error) error) error {
	if w.frameDone() >= maxUnflushed || r.Buffered() == 0 {
		if err := w.Flush(); err != nil {
			return wrap(err)
		}
		return nil
	}
	if !frameBuffered(r) {
		w.flushSoon()
	}
	return nil
}

// maxUnflushed bounds how many relayed frames wait for a flush (and their
// latency observations) while more keep arriving.
const maxUnflushed = 64

// frameBuffered reports whether the next frame is already whole in r, so
// that relaying it cannot block on the network.
func frameBuffered(r *bufio.Reader) bool {
	n := r.Buffered()
	if n < sizeLen {
		return false
	}
	b, _ := r.Peek(sizeLen)
	size := int64(binary.BigEndian.Uint32(b))
	return int64(n) >= sizeLen+size
}

// relayRequest streams a request upstream as bytes; only a produce request's
// acks are read, because acks=0 gets no response.
func (p *proxyConn) relayRequest(h requestHeader, frameLen int) error {
	expect := true
	if h.Key == keyProduce {
		acks, err := p.peekAcks(h, frameLen)
		if err != nil {
			return err
		}
		expect = acks != 0
	}
	if expect {
		if err := p.push(pending{key: h.Key, version: h.Version, corr: h.CorrID}); err != nil {
			return err
		}
	}
	if err := copyFrame(p.uw, p.cr, p.client, frameLen); err != nil {
		return p.classifyCopy(err)
	}
	return nil
}

// classifyCopy tells a client that went away from a broker that did.
func (p *proxyConn) classifyCopy(err error) error {
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Op == "write" {
		return upstreamLost(err)
	}
	return err
}

func (p *proxyConn) push(pend pending) error {
	select {
	case p.inflight <- pend:
		return nil
	default:
	}
	// Full: flush what is buffered so the broker can answer, then wait.
	if err := p.flushRequests(); err != nil {
		return err
	}
	select {
	case p.inflight <- pend:
		return nil
	case <-p.done:
		return net.ErrClosed
	}
}

func (p *proxyConn) flushRequests() error { return upstreamLost(p.uw.Flush()) }

func observe(h *histogram, waits *[]time.Time) {
	if len(*waits) == 0 {
		return
	}
	now := time.Now()
	for _, t := range *waits {
		h.observe(now.Sub(t))
	}
	*waits = (*waits)[:0]
}

// peekAcks reads a produce request's acks from the buffered frame without
// consuming it; only a header larger than the read buffer falls back to
// reading the frame (which then can no longer stream, hence the peek).
func (p *proxyConn) peekAcks(h requestHeader, frameLen int) (int16, error) {
	for _, n := range []int{min(frameLen, 512), min(frameLen, p.cr.Size())} {
		b, err := p.cr.Peek(n)
		if err != nil {
			return 0, noEOF(err)
		}
		body := b[sizeLen:]
		hl, err := requestHeaderLen(body, h)
		if err == nil {
			var acks int16
			acks, err = produceAcks(body[hl:], h.Version)
			if err == nil {
				return acks, nil
			}
		}
		if !errors.Is(err, errTruncated) {
			return 0, badFrame(err)
		}
		if n == frameLen {
			return 0, badFrame(&FrameError{Reason: "produce request ends inside its header"})
		}
	}
	return 0, badFrame(&FrameError{Reason: fmt.Sprintf("produce request header longer than limits.buffer_bytes %d", p.cr.Size())})
}

// readFrame reads a whole frame into a pooled buffer from r, which reads
// from raw.
func readFrame(r *bufio.Reader, raw io.Reader, frameLen int) (*[]byte, error) {
	buf := frameBufs.get(frameLen)
	e := expect(raw, frameLen-r.Buffered())
	_, err := io.ReadFull(r, *buf)
	if e != nil {
		e.Expect(0)
	}
	if err != nil {
		frameBufs.put(buf)
		return nil, noEOF(err)
	}
	return buf, nil
}

// filteredProduce decodes a produce request, runs the filters and sends the
// re-encoded request upstream, or answers it with an error itself.
func (p *proxyConn) filteredProduce(h requestHeader, frameLen int) error {
	buf, err := readFrame(p.cr, p.client, frameLen)
	if err != nil {
		return err
	}
	defer frameBufs.put(buf)
	body := (*buf)[sizeLen:]
	hl, err := requestHeaderLen(body, h)
	if err != nil {
		return badFrame(fmt.Errorf("produce request header: %w", err))
	}
	req := kmsg.ProduceRequest{Version: h.Version}
	if err := req.ReadFrom(body[hl:]); err != nil {
		return badFrame(fmt.Errorf("produce v%d request: %w", h.Version, err))
	}
	p.reqOrigs = p.reqOrigs[:0]
	for ti := range req.Topics {
		for _, pt := range req.Topics[ti].Partitions {
			p.reqOrigs = append(p.reqOrigs, pt.Records)
		}
	}
	defer p.reqScratch.release()
	failed, ferr := filterProduce(p.reqCtx, p.g.cfg.Filters, &req)
	if len(failed) > 0 {
		p.log.Warn("record filter refused partitions of a produce request", "error", &PartitionErrors{failed}, "acks", req.Acks)
	}
	if ferr != nil || len(failed) > 0 && len(req.Topics) == 0 {
		var resp *kmsg.ProduceResponse
		if ferr != nil {
			p.log.Warn("record filter refused a produce request", "error", ferr, "acks", req.Acks)
			resp = produceErrorResponse(&req, errorCode(ferr, kerr.InvalidRecord.Code), ferr.Error())
			addFailed(resp, failed)
		} else {
			resp = produceFailedResponse(req.Version, failed)
		}
		if req.Acks == 0 {
			return nil
		}
		out := frameBufs.get(0)
		*out = appendResponseFrame((*out)[:0], h.CorrID, requestFlexible(keyProduce, h.Version), resp)
		if err := p.push(pending{key: h.Key, version: h.Version, corr: h.CorrID, synthetic: out}); err != nil {
			return err
		}
		return p.placeholder(h.CorrID)
	}
	if req.Acks != 0 {
		if err := p.push(pending{key: h.Key, version: h.Version, corr: h.CorrID, failed: failed}); err != nil {
			return err
		}
	}
	if len(failed) == 0 && p.spliceProduce(body[hl:], &req) {
		return upstreamLost(writeSpliced(p.uw, body[:hl], &p.reqSplice))
	}
	return upstreamLost(writeReencoded(p.uw, body[:hl], &req, frameLen))
}

// spliceProduce readies p.reqSplice to send req, decoded from msg, with
// the record sets the filters replaced; false means the request changed in
// some other way and must be re-encoded.
func (p *proxyConn) spliceProduce(msg []byte, req *kmsg.ProduceRequest) bool {
	p.reqNows = p.reqNows[:0]
	for ti := range req.Topics {
		for _, pt := range req.Topics[ti].Partitions {
			p.reqNows = append(p.reqNows, pt.Records)
		}
	}
	return p.reqSplice.spliceAll(msg, requestFlexible(keyProduce, req.Version), p.reqOrigs, p.reqNows)
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (a == nil) == (b == nil) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// writeReencoded writes a frame of the message header hdr and msg as kmsg
// encodes it, built in a pooled buffer of about sizeHint bytes.
func writeReencoded(w io.Writer, hdr []byte, msg interface{ AppendTo([]byte) []byte }, sizeHint int) error {
	out := frameBufs.get(sizeHint)
	defer frameBufs.put(out)
	b := append((*out)[:0], 0, 0, 0, 0)
	b = append(b, hdr...)
	b = msg.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-sizeLen))
	*out = b
	_, err := w.Write(b)
	return err
}

// writeSpliced writes a frame: its size, the message header hdr, and the
// message s describes.
func writeSpliced(w io.Writer, hdr []byte, s *splicer) error {
	var size [sizeLen]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(hdr)+s.size))
	if err := writeAll(w, size[:]); err != nil {
		return err
	}
	if err := writeAll(w, hdr); err != nil {
		return err
	}
	return s.writeTo(w)
}

// placeholder sends the broker an ApiVersions v0 request with corr, whose
// answer stands in for a response the gateway makes itself.
func (p *proxyConn) placeholder(corr int32) error {
	var b [sizeLen + minRequestLen]byte
	binary.BigEndian.PutUint32(b[0:], minRequestLen)
	binary.BigEndian.PutUint16(b[4:], uint16(keyApiVersions))
	binary.BigEndian.PutUint16(b[6:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(corr))
	binary.BigEndian.PutUint16(b[12:], 0xffff) // null client id
	_, err := p.uw.Write(b[:])
	return upstreamLost(err)
}

// decodedFetchRequest relays a fetch request unchanged, keeping its decoded
// form for the filters that see its response.
func (p *proxyConn) decodedFetchRequest(h requestHeader, frameLen int) error {
	buf, err := readFrame(p.cr, p.client, frameLen)
	if err != nil {
		return err
	}
	defer frameBufs.put(buf)
	body := (*buf)[sizeLen:]
	hl, err := requestHeaderLen(body, h)
	if err != nil {
		return badFrame(fmt.Errorf("fetch request header: %w", err))
	}
	req := &kmsg.FetchRequest{Version: h.Version}
	if err := req.ReadFrom(body[hl:]); err != nil {
		return badFrame(fmt.Errorf("fetch v%d request: %w", h.Version, err))
	}
	if err := p.push(pending{key: h.Key, version: h.Version, corr: h.CorrID, fetch: req}); err != nil {
		return err
	}
	_, err = p.uw.Write(*buf)
	return upstreamLost(err)
}

// appendResponseFrame appends a whole response frame: size, correlation id,
// empty header tags when flexible, body.
func appendResponseFrame(dst []byte, corr int32, flexible bool, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	if flexible {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-sizeLen))
	return dst
}

// responses relays broker responses to the client in request order. It
// blocks reading the broker, not waiting for requests, so a broker that
// goes away closes the client connection at once.
func (p *proxyConn) responses() error {
	maxFrame := p.g.cfg.Limits.MaxFrameBytes
	for {
		size, err := peekSize(p.ur)
		if err != nil {
			select {
			case <-p.done:
				return nil
			default:
			}
			return upstreamLost(noEOF(err))
		}
		if err := checkFrameSize(size, minResponseLen, maxFrame); err != nil {
			return badFrame(fmt.Errorf("from the broker: %w", err))
		}
		// The request side queues a request before writing it, so its
		// entry is there by the time the broker answers; none means
		// the broker answered nothing the client asked.
		var pend pending
		select {
		case pend = <-p.inflight:
		default:
			return badFrame(errors.New("from the broker: a response with no request outstanding"))
		}
		hdr, err := p.ur.Peek(sizeLen + 4)
		if err != nil {
			return upstreamLost(noEOF(err))
		}
		if corr := int32(binary.BigEndian.Uint32(hdr[sizeLen:])); corr != pend.corr {
			return badFrame(fmt.Errorf("broker answered correlation id %d, expected %d (%s)", corr, pend.corr, apiName(pend.key)))
		}
		frameLen := sizeLen + int(size)
		p.g.metrics.response(pend.key, frameLen)
		switch {
		case pend.synthetic != nil:
			if _, err := p.ur.Discard(frameLen); err != nil {
				return upstreamLost(noEOF(err))
			}
			_, err = p.cw.Write(*pend.synthetic)
			frameBufs.put(pend.synthetic)
		case pend.saslV0 || pend.rawAuth:
			err = p.saslResponse(pend, frameLen)
		case rewritten(pend.key) || pend.fetch != nil || pend.failed != nil:
			err = p.rewriteResponse(pend, frameLen)
		default:
			if err = copyFrame(p.cw, p.ur, p.upstream, frameLen); err != nil {
				var ne *net.OpError
				if errors.As(err, &ne) && ne.Op == "read" || errors.Is(err, io.ErrUnexpectedEOF) {
					err = upstreamLost(err)
				}
			}
		}
		if err != nil {
			return err
		}
		if err := p.afterFrame(p.ur, p.cw, func(err error) error { return err }); err != nil {
			return err
		}
	}
}

// rewriteResponse reads a whole response, rewrites its body and writes it
// with the broker's header.
func (p *proxyConn) rewriteResponse(pend pending, frameLen int) error {
	buf, err := readFrame(p.ur, p.upstream, frameLen)
	if err != nil {
		return upstreamLost(err)
	}
	defer frameBufs.put(buf)
	body := (*buf)[sizeLen:]
	hl, err := responseHeaderLen(body, pend.key, pend.version)
	if err != nil {
		return badFrame(fmt.Errorf("from the broker: %w", err))
	}
	if pend.fetch != nil {
		return p.filteredFetch(body, hl, pend)
	}
	out := frameBufs.get(frameLen + 256)
	defer frameBufs.put(out)
	b := append((*out)[:0], 0, 0, 0, 0)
	b = append(b, body[:hl]...)
	if pend.failed != nil {
		b, err = mergeProduceErrors(b, body[hl:], pend.version, pend.failed)
	} else {
		b, _, err = rewriteResponse(b, body[hl:], pend.key, pend.version, p.g)
	}
	if err != nil {
		return badFrame(fmt.Errorf("from the broker: %w", err))
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-sizeLen))
	*out = b
	_, err = p.cw.Write(b)
	return err
}

// filteredFetch decodes a fetch response (body, its header hl bytes long),
// runs the filters and sends it to the client: spliced when only record
// sets changed, else re-encoded.
func (p *proxyConn) filteredFetch(body []byte, hl int, pend pending) error {
	resp := kmsg.FetchResponse{Version: pend.version}
	if err := resp.ReadFrom(body[hl:]); err != nil {
		return badFrame(fmt.Errorf("from the broker: fetch v%d response: %w", pend.version, err))
	}
	p.respOrigs, p.respCodes = p.respOrigs[:0], p.respCodes[:0]
	for ti := range resp.Topics {
		for _, pt := range resp.Topics[ti].Partitions {
			p.respOrigs = append(p.respOrigs, pt.RecordBatches)
			p.respCodes = append(p.respCodes, pt.ErrorCode)
		}
	}
	defer p.respScratch.release()
	spliced := true
	for _, f := range p.g.cfg.Filters {
		if err := f.FetchResponse(p.respCtx, pend.fetch, &resp); err != nil {
			p.log.Warn("record filter failed a fetch response", "error", err)
			failFetch(&resp, errorCode(err, kerr.UnknownServerError.Code))
			spliced = false
			break
		}
	}
	if spliced && p.spliceFetch(body[hl:], &resp) {
		return writeSpliced(p.cw, body[:hl], &p.respSplice)
	}
	return writeReencoded(p.cw, body[:hl], &resp, sizeLen+len(body)+256)
}

// spliceFetch readies p.respSplice to send resp, decoded from msg, with
// the record sets the filters replaced; false means the response changed
// in some other way (a partition's error code) and must be re-encoded.
func (p *proxyConn) spliceFetch(msg []byte, resp *kmsg.FetchResponse) bool {
	p.respNows = p.respNows[:0]
	for ti := range resp.Topics {
		for _, pt := range resp.Topics[ti].Partitions {
			if i := len(p.respNows); i == len(p.respCodes) || pt.ErrorCode != p.respCodes[i] {
				return false
			}
			p.respNows = append(p.respNows, pt.RecordBatches)
		}
	}
	return p.respSplice.spliceAll(msg, responseFlexible(keyFetch, resp.Version), p.respOrigs, p.respNows)
}
