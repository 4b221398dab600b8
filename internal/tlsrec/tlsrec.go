// Package tlsrec is a TLS 1.3 record layer for the gateway's data phase.
//
// crypto/tls runs the handshake, with all of its certificate and mutual TLS
// checks. When the session is TLS 1.3 with AES-GCM (TLS_AES_128_GCM_SHA256
// or TLS_AES_256_GCM_SHA384) this package takes over the records: it opens
// them straight from one large socket read buffer into the caller's buffer,
// seals a Write's records into one output buffer written with one system
// call, and can use a faster AES-GCM than crypto/tls's (Options.NewAEAD).
// Anything else (TLS 1.2, ChaCha20-Poly1305) stays with crypto/tls, and the
// *tls.Conn itself is returned.
//
// The traffic secrets come from crypto/tls's key log (Config.KeyLogWriter),
// captured per connection in memory and never written anywhere unless the
// configuration had a KeyLogWriter of its own. During the handshake
// crypto/tls reads through a reader that stops at the end of each TLS
// record, so nothing sent under the application keys is left inside
// crypto/tls when this package takes over.
//
// Nor may crypto/tls have sent anything under the application keys by
// then, so that both sides' sequence numbers start at zero (a record
// sealed twice under one nonce would give the key away). A Go 1.26 client
// sends nothing after its Finished. A Go 1.26 server's only message of its
// own after the handshake is its NewSessionTicket, and it sends none when
// Config.SessionTicketsDisabled is set (shouldSendSessionTickets in
// crypto/tls/handshake_server_tls13.go); Server sets it for TLS 1.3
// clients. Two guards keep this true at run time rather than by
// assumption:
//   - the record layer takes over only in binaries built with a Go release
//     it was tested with (TestedGo); with any other, crypto/tls keeps every
//     connection;
//   - every byte crypto/tls writes after it logs this side's application
//     secret is kept until the handshake ends, and each record among them
//     is tried against that secret's key at sequence number zero. A record
//     that opens was sent under the application keys: crypto/tls then
//     keeps the connection (its sequence numbers are right), and
//     Options.OnKeep is told why.
package tlsrec

import (
	"context"
	"crypto/cipher"
	"crypto/tls"
	"encoding/binary"
	"net"
	"runtime"
	"slices"
	"strings"
)

// TestedGo lists the Go releases (go1.N) whose crypto/tls this package is
// tested with; go.mod pins the toolchain to one of them.
var TestedGo = []string{"go1.26"}

// Supported reports whether this binary's Go release is one the record
// layer was tested with; when not, reason says so and Server and Client
// leave every connection to crypto/tls.
func Supported() (ok bool, reason string) { return supportedRelease(runtime.Version()) }

func supportedRelease(v string) (bool, string) {
	for _, t := range TestedGo {
		if v == t || strings.HasPrefix(v, t+".") {
			return true, ""
		}
	}
	return false, "tlsrec is tested with " + strings.Join(TestedGo, ", ") + " only; this binary is built with " + v
}

// Options tune the data phase.
type Options struct {
	// NewAEAD makes the record cipher from a 16- or 32-byte key; nil means
	// crypto/aes with crypto/cipher's GCM.
	NewAEAD func(key []byte) (cipher.AEAD, error)
	// OnKeep, when set, is told why crypto/tls keeps a connection whose
	// handshake succeeded (TLS 1.2, ChaCha20, an untested Go release, or
	// the guard against records already sent under the application keys).
	OnKeep func(reason string)

	// keepTickets lets a TLS 1.3 server send session tickets (tests: it
	// makes crypto/tls write under the application keys, which the guard
	// must catch).
	keepTickets bool
}

// Reasons given to Options.OnKeep besides Supported's.
const (
	KeepNotTLS13AESGCM = "not a TLS 1.3 AES-GCM session"
	KeepNoSecrets      = "crypto/tls did not log the traffic secrets"
	KeepSentUnderKeys  = "crypto/tls sent records under the application keys during the handshake"
)

// Server runs a server handshake over raw with cfg and returns the
// data-phase connection: a *Conn for TLS 1.3 with AES-GCM, otherwise the
// *tls.Conn (whose NetConn is a thin reader over raw that hands it the
// bytes read ahead during the handshake). Session tickets are not issued to TLS 1.3 clients (they would
// be sent under the application keys by crypto/tls); TLS 1.2 clients get
// whatever cfg says, but as each connection handshakes with a clone of cfg,
// their tickets survive across connections only when cfg has explicit
// keys (Config.SetSessionTicketKeys). On error raw is left to the caller to
// close.
func Server(ctx context.Context, raw net.Conn, cfg *tls.Config, o Options) (net.Conn, error) {
	return handshake(ctx, raw, cfg, o, true)
}

// Client runs a client handshake over raw with cfg and returns the
// data-phase connection: a *Conn for TLS 1.3 with AES-GCM, otherwise the
// *tls.Conn. Session tickets the server sends are ignored. On error raw is
// left to the caller to close.
func Client(ctx context.Context, raw net.Conn, cfg *tls.Config, o Options) (net.Conn, error) {
	return handshake(ctx, raw, cfg, o, false)
}

func handshake(ctx context.Context, raw net.Conn, cfg *tls.Config, o Options, server bool) (net.Conn, error) {
	if cfg == nil {
		cfg = &tls.Config{}
	}
	keep := func(reason string) {
		if o.OnKeep != nil {
			o.OnKeep(reason)
		}
	}
	if ok, why := Supported(); !ok {
		tc := tlsConn(raw, cfg, server)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, err
		}
		keep(why)
		return tc, nil
	}
	hc := newHandshakeConn(raw)
	keys := &keyCapture{forward: cfg.KeyLogWriter, writeLabel: clientTrafficLabel,
		onWriteSecret: func() { hc.watching = true }}
	if server {
		keys.writeLabel = serverTrafficLabel
	}
	cfg = cfg.Clone()
	cfg.KeyLogWriter = keys
	if server {
		cfg.GetConfigForClient = serverConfigFor(cfg, keys, o.keepTickets)
	}
	tc := tlsConn(hc, cfg, server)
	err := tc.HandshakeContext(ctx)
	hc.watching = false
	if err != nil {
		keys.wipe()
		return nil, err
	}
	st := tc.ConnectionState()
	s, ok := suiteFor(st.CipherSuite)
	if !ok || st.Version != tls.VersionTLS13 {
		keys.wipe()
		hc.keepTLS()
		keep(KeepNotTLS13AESGCM)
		return tc, nil
	}
	clientSecret, serverSecret := keys.take()
	readSecret, writeSecret := serverSecret, clientSecret
	if server {
		readSecret, writeSecret = clientSecret, serverSecret
	}
	size := s.hash().Size()
	if len(readSecret) != size || len(writeSecret) != size {
		// crypto/tls did not log the secrets; it keeps the connection.
		clear(readSecret)
		clear(writeSecret)
		hc.keepTLS()
		keep(KeepNoSecrets)
		return tc, nil
	}
	newAEAD := o.NewAEAD
	if newAEAD == nil {
		newAEAD = defaultAEAD
	}
	c := &Conn{
		raw:            raw,
		state:          st,
		in:             direction{suite: s, newAEAD: newAEAD},
		out:            direction{suite: s, newAEAD: newAEAD},
		keyUpdateAfter: defaultKeyUpdateAfter,
	}
	if err := c.in.setSecret(readSecret); err != nil {
		clear(readSecret)
		clear(writeSecret)
		return nil, err
	}
	if err := c.out.setSecret(writeSecret); err != nil {
		clear(writeSecret)
		clear(c.in.secret)
		return nil, err
	}
	if hc.overflow || sentUnder(&c.out, hc.sent) {
		clear(c.in.secret)
		clear(c.out.secret)
		hc.sent = nil
		hc.keepTLS()
		keep(KeepSentUnderKeys)
		return tc, nil
	}
	hc.sent = nil
	c.rbuf, c.r0, c.r1 = hc.leftover()
	return c, nil
}

func tlsConn(raw net.Conn, cfg *tls.Config, server bool) *tls.Conn {
	if server {
		return tls.Server(raw, cfg)
	}
	return tls.Client(raw, cfg)
}

// serverConfigFor returns base's GetConfigForClient: it keeps the key
// capture on whatever configuration the original GetConfigForClient picks,
// and turns session tickets off when the handshake will be TLS 1.3 (Go's
// server sends its ticket under the application keys, which the record
// layer would not know about).
func serverConfigFor(base *tls.Config, keys *keyCapture, keepTickets bool) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	orig := base.GetConfigForClient
	return func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		chosen := base
		if orig != nil {
			c, err := orig(hello)
			if err != nil {
				return nil, err
			}
			if c != nil {
				chosen = c.Clone()
				keys.mu.Lock()
				keys.forward = c.KeyLogWriter
				keys.mu.Unlock()
				chosen.KeyLogWriter = keys
			}
		}
		tls13 := slices.Contains(hello.SupportedVersions, tls.VersionTLS13) &&
			(chosen.MaxVersion == 0 || chosen.MaxVersion >= tls.VersionTLS13)
		if tls13 && !chosen.SessionTicketsDisabled && !keepTickets {
			if chosen == base {
				chosen = base.Clone()
			}
			chosen.SessionTicketsDisabled = true
		}
		if chosen == base {
			return nil, nil
		}
		chosen.GetConfigForClient = nil
		return chosen, nil
	}
}

// sentUnder reports whether any of the records in sent (what crypto/tls
// wrote after logging d's secret) authenticates under d's key as the first
// record, sequence number zero: crypto/tls would then have used the
// application keys already, and taking over at zero would reuse a nonce.
// Bytes that do not parse as whole records count as sent under the key:
// nothing unproven is taken over.
func sentUnder(d *direction, sent []byte) bool {
	var scratch []byte
	for len(sent) > 0 {
		if len(sent) < recordHeaderLen {
			return true
		}
		n := int(binary.BigEndian.Uint16(sent[3:5]))
		if len(sent) < recordHeaderLen+n {
			return true
		}
		hdr, body := sent[:recordHeaderLen], sent[recordHeaderLen:recordHeaderLen+n]
		if hdr[0] == typeApplicationData && n >= tagLen {
			// d.iv is the nonce of sequence number zero.
			if _, err := d.aead.Open(scratch[:0], d.iv[:], body, hdr); err == nil {
				return true
			}
		}
		sent = sent[recordHeaderLen+n:]
	}
	return false
}
