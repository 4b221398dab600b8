package gateway

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL is relayed, not terminated: the brokers authenticate the client.
// SaslHandshake v1 and SaslAuthenticate are ordinary framed requests and pass
// as bytes. SaslHandshake v0 is followed by raw SASL tokens without a Kafka
// header; the gateway sends the handshake upstream as v1 and wraps each raw
// token in a SaslAuthenticate v0 request, unwrapping the answer, so old
// clients work against brokers that dropped v0 (and the frame parser never
// sees a headerless frame).

// saslRounds is how many client tokens a mechanism sends after a v0
// handshake; 0 for mechanisms the gateway cannot count (GSSAPI negotiates
// its number of rounds).
func saslRounds(mechanism string) int {
	switch mechanism {
	case "PLAIN", "OAUTHBEARER":
		return 1
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		return 2
	}
	return 0
}

// saslHandshakeV0 relays a v0 handshake as v1, waits for its answer and, if
// the broker accepted the mechanism, translates the raw token rounds.
func (p *proxyConn) saslHandshakeV0(h requestHeader, frameLen int) error {
	buf, err := readFrame(p.cr, p.client, frameLen)
	if err != nil {
		return err
	}
	defer frameBufs.put(buf)
	body := (*buf)[sizeLen:]
	hl, err := requestHeaderLen(body, h)
	if err != nil {
		return badFrame(fmt.Errorf("SaslHandshake header: %w", err))
	}
	req := kmsg.SASLHandshakeRequest{Version: 0}
	if err := req.ReadFrom(body[hl:]); err != nil {
		return badFrame(fmt.Errorf("SaslHandshake v0: %w", err))
	}
	rounds := saslRounds(req.Mechanism)
	if rounds == 0 {
		return badFrame(fmt.Errorf("SaslHandshake v0 with mechanism %q: the gateway relays v0 only for PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER; use a client that speaks SaslAuthenticate (v1)", req.Mechanism))
	}
	binary.BigEndian.PutUint16(body[2:], 1)
	if err := p.push(pending{key: h.Key, version: 0, corr: h.CorrID, saslV0: true}); err != nil {
		return err
	}
	if _, err := p.uw.Write(*buf); err != nil {
		return upstreamLost(err)
	}
	if err := p.flushRequests(); err != nil {
		return err
	}
	var ok bool
	select {
	case ok = <-p.saslAccepted:
	case <-p.done:
		return io.EOF
	}
	if !ok {
		return nil // the client learns the mechanism was refused
	}
	maxFrame := p.g.cfg.Limits.MaxFrameBytes
	for i := 0; i < rounds; i++ {
		size, err := peekSize(p.cr)
		if err != nil {
			return noEOF(err)
		}
		if err := checkFrameSize(size, 0, maxFrame); err != nil {
			return badFrame(fmt.Errorf("SASL token: %w", err))
		}
		tok, err := readFrame(p.cr, p.client, sizeLen+int(size))
		if err != nil {
			return err
		}
		p.saslCorr--
		out := frameBufs.get(0)
		b := append((*out)[:0], 0, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(keySASLAuthenticate))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(p.saslCorr))
		b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
		auth := kmsg.SASLAuthenticateRequest{Version: 0, SASLAuthBytes: (*tok)[sizeLen:]}
		b = auth.AppendTo(b)
		binary.BigEndian.PutUint32(b, uint32(len(b)-sizeLen))
		frameBufs.put(tok)
		if err := p.push(pending{key: keySASLAuthenticate, version: 0, corr: p.saslCorr, rawAuth: true}); err != nil {
			frameBufs.put(out)
			return err
		}
		_, err = p.uw.Write(b)
		*out = b
		frameBufs.put(out)
		if err != nil {
			return upstreamLost(err)
		}
		p.uw.frameDone()
		if err := p.flushRequests(); err != nil {
			return err
		}
	}
	return nil
}

// saslResponse handles the answers to a translated v0 handshake: the
// handshake answer passes (and tells the request side whether tokens
// follow); a SaslAuthenticate answer goes to the client as a raw token, and
// a failed one closes the connection, as a broker does for v0.
func (p *proxyConn) saslResponse(pend pending, frameLen int) error {
	buf, err := readFrame(p.ur, p.upstream, frameLen)
	if err != nil {
		return upstreamLost(err)
	}
	defer frameBufs.put(buf)
	body := (*buf)[sizeLen+4:] // both answers use response header v0
	if pend.saslV0 {
		if len(body) < 2 {
			return badFrame(fmt.Errorf("from the broker: short SaslHandshake answer"))
		}
		p.saslAccepted <- binary.BigEndian.Uint16(body) == 0
		_, err := p.cw.Write(*buf)
		return err
	}
	resp := kmsg.SASLAuthenticateResponse{Version: 0}
	if err := resp.ReadFrom(body); err != nil {
		return badFrame(fmt.Errorf("from the broker: SaslAuthenticate v0: %w", err))
	}
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return &connError{reason: closeSASLFailed, err: fmt.Errorf("SASL authentication failed (error %d): %s", resp.ErrorCode, msg)}
	}
	var size [sizeLen]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(resp.SASLAuthBytes)))
	if _, err := p.cw.Write(size[:]); err != nil {
		return err
	}
	_, err = p.cw.Write(resp.SASLAuthBytes)
	return err
}
