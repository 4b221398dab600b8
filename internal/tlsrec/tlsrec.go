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
// Nor has crypto/tls sent anything under the application keys by then, so
// both sides' sequence numbers start at zero. A Go 1.26 client sends
// nothing after its Finished. A Go 1.26 server's only message of its own
// after the handshake is its NewSessionTicket, and it sends none when
// Config.SessionTicketsDisabled is set (shouldSendSessionTickets in
// crypto/tls/handshake_server_tls13.go); Server sets it for TLS 1.3
// clients. The interop tests break if a later Go changes either.
package tlsrec

import (
	"context"
	"crypto/cipher"
	"crypto/tls"
	"net"
	"slices"
)

// Options tune the data phase.
type Options struct {
	// NewAEAD makes the record cipher from a 16- or 32-byte key; nil means
	// crypto/aes with crypto/cipher's GCM.
	NewAEAD func(key []byte) (cipher.AEAD, error)
}

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
	keys := &keyCapture{forward: cfg.KeyLogWriter}
	cfg = cfg.Clone()
	cfg.KeyLogWriter = keys
	if server {
		cfg.GetConfigForClient = serverConfigFor(cfg, keys)
	}
	hc := newHandshakeConn(raw)
	tc := tlsConn(hc, cfg, server)
	if err := tc.HandshakeContext(ctx); err != nil {
		keys.wipe()
		return nil, err
	}
	st := tc.ConnectionState()
	s, ok := suiteFor(st.CipherSuite)
	if !ok || st.Version != tls.VersionTLS13 {
		keys.wipe()
		hc.keepTLS()
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
func serverConfigFor(base *tls.Config, keys *keyCapture) func(*tls.ClientHelloInfo) (*tls.Config, error) {
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
		if tls13 && !chosen.SessionTicketsDisabled {
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
