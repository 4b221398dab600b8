package tlsrec

import (
	"bytes"
	"crypto/cipher"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xp-bench/xp/internal/aesgcm"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8448 §3 (simple 1-RTT handshake): application traffic keys.
func TestExpandLabelRFC8448(t *testing.T) {
	s, _ := suiteFor(tls.TLS_AES_128_GCM_SHA256)
	for _, tc := range []struct{ name, secret, key, iv string }{
		{"server", "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643",
			"9f02283b6c9c07efc26bb9f2ac92e356", "cf782b88dd83549aadf1e984"},
		{"client", "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5",
			"17422dda596ed5d9acd890e3c63f5051", "5b78923dee08579033e523d9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := unhex(t, tc.secret)
			key, err := expandLabel(s.hash, secret, "key", 16)
			if err != nil {
				t.Fatal(err)
			}
			iv, err := expandLabel(s.hash, secret, "iv", 12)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(key, unhex(t, tc.key)) || !bytes.Equal(iv, unhex(t, tc.iv)) {
				t.Errorf("key %x iv %x; want %s %s", key, iv, tc.key, tc.iv)
			}
		})
	}
}

func TestKeyCapture(t *testing.T) {
	var fwd bytes.Buffer
	k := &keyCapture{forward: &fwd}
	lines := "CLIENT_HANDSHAKE_TRAFFIC_SECRET 0102 aaaa\n" +
		"CLIENT_TRAFFIC_SECRET_0 0102 0a0b0c\n" +
		"SERVER_TRAFFIC_SECRET_0 0102 0d0e0f\n"
	for _, l := range strings.SplitAfter(lines, "\n") {
		if l == "" {
			continue
		}
		if n, err := k.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write(%q) = %d, %v", l, n, err)
		}
	}
	if fwd.String() != lines {
		t.Errorf("forwarded %q", fwd.String())
	}
	c, s := k.take()
	if !bytes.Equal(c, []byte{10, 11, 12}) || !bytes.Equal(s, []byte{13, 14, 15}) {
		t.Errorf("client %x server %x", c, s)
	}
	if c2, s2 := k.take(); c2 != nil || s2 != nil {
		t.Error("take left the secrets behind")
	}
	if _, err := k.Write([]byte("SERVER_TRAFFIC_SECRET_0 0102 zz\n")); err == nil {
		t.Error("malformed hex accepted")
	}
}

// mustOurs asserts that the record layer took c over with an AES-GCM suite.
func mustOurs(t *testing.T, c net.Conn) *Conn {
	t.Helper()
	rc, ok := c.(*Conn)
	if !ok {
		t.Fatalf("got %T, want *tlsrec.Conn", c)
	}
	if _, ok := suiteFor(rc.ConnectionState().CipherSuite); !ok || rc.ConnectionState().Version != tls.VersionTLS13 {
		t.Fatalf("state %x/%x", rc.ConnectionState().Version, rc.ConnectionState().CipherSuite)
	}
	return rc
}

func TestInterop(t *testing.T) {
	ours, fast := Options{}, Options{NewAEAD: aesgcm.New}
	cases := []struct {
		name                 string
		srv, cli             side
		oursSrv, oursCli     bool
		mtls                 bool
		serverConfigForCheck bool
	}{
		{name: "ours server, go client", srv: oursServer(ours), cli: goClient, oursSrv: true},
		{name: "go server, ours client", srv: goServer, cli: oursClient(ours), oursCli: true},
		{name: "ours both", srv: oursServer(ours), cli: oursClient(ours), oursSrv: true, oursCli: true},
		{name: "ours server, go client, mTLS", srv: oursServer(ours), cli: goClient, oursSrv: true, mtls: true},
		{name: "go server, ours client, mTLS", srv: goServer, cli: oursClient(ours), oursCli: true, mtls: true},
		{name: "ours both, mTLS", srv: oursServer(ours), cli: oursClient(ours), oursSrv: true, oursCli: true, mtls: true},
		{name: "ours server with GetConfigForClient, go client", srv: oursServer(ours), cli: goClient, oursSrv: true, serverConfigForCheck: true},
		// The gateway's AES-GCM, which seals records without copying
		// their content first where the CPU has VAES.
		{name: "ours server (aesgcm), go client", srv: oursServer(fast), cli: goClient, oursSrv: true},
		{name: "go server, ours client (aesgcm)", srv: goServer, cli: oursClient(fast), oursCli: true},
		{name: "ours both (aesgcm), mTLS", srv: oursServer(fast), cli: oursClient(fast), oursSrv: true, oursCli: true, mtls: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scfg := serverConfig(t, tc.mtls)
			if tc.serverConfigForCheck {
				// A configuration chosen per client, with tickets on: the
				// key capture and the ticket switch must follow it.
				chosen := scfg.Clone()
				scfg = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return chosen, nil }}
			}
			ccfg := clientConfig(t, tc.mtls)
			cache := &recordingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
			ccfg.ClientSessionCache = cache
			s, c := connect(t, tc.srv, scfg, tc.cli, ccfg)
			if tc.oursSrv {
				st := mustOurs(t, s).ConnectionState()
				if tc.mtls && len(st.PeerCertificates) == 0 {
					t.Error("server: no client certificate in the connection state")
				}
			}
			if tc.oursCli {
				mustOurs(t, c)
			}
			exchange(t, s, c, testSizes, nil, nil)
			if tc.oursSrv && cache.puts.Load() != 0 {
				// crypto/tls would have sealed the ticket under the
				// server's first application key, out of our sequence.
				t.Errorf("our server issued %d session tickets", cache.puts.Load())
			}
		})
	}
}

// The recordingCache does see the ticket a crypto/tls server sends.
func TestRecordingCacheControl(t *testing.T) {
	ccfg := clientConfig(t, false)
	cache := &recordingCache{ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	ccfg.ClientSessionCache = cache
	s, c := connect(t, goServer, serverConfig(t, false), goClient, ccfg)
	exchange(t, s, c, []int{10}, nil, nil)
	if cache.puts.Load() == 0 {
		t.Error("no ticket stored from a crypto/tls server")
	}
}

// recordingCache counts the tickets a crypto/tls client stores.
type recordingCache struct {
	tls.ClientSessionCache
	puts atomic.Int32
}

func (c *recordingCache) Put(key string, cs *tls.ClientSessionState) {
	if cs != nil {
		c.puts.Add(1)
	}
	c.ClientSessionCache.Put(key, cs)
}

// TLS 1.2 stays with crypto/tls, and works.
func TestTLS12FallsBack(t *testing.T) {
	t.Run("ours server", func(t *testing.T) {
		ccfg := clientConfig(t, false)
		ccfg.MaxVersion = tls.VersionTLS12
		s, c := connect(t, oursServer(Options{}), serverConfig(t, false), goClient, ccfg)
		if _, ok := s.(*tls.Conn); !ok {
			t.Fatalf("got %T, want *tls.Conn", s)
		}
		exchange(t, s, c, testSizes, nil, nil)
	})
	t.Run("ours client", func(t *testing.T) {
		scfg := serverConfig(t, true)
		scfg.MaxVersion = tls.VersionTLS12
		s, c := connect(t, goServer, scfg, oursClient(Options{}), clientConfig(t, true))
		if _, ok := c.(*tls.Conn); !ok {
			t.Fatalf("got %T, want *tls.Conn", c)
		}
		exchange(t, s, c, testSizes, nil, nil)
	})
}

// Certificate checks stay with crypto/tls: a client without a certificate
// is refused by a server demanding one.
func TestMTLSRequiresClientCertificate(t *testing.T) {
	rs, rc := tcpPair(t)
	_, _, serr, _ := handshakePair(t, oursServer(Options{}), serverConfig(t, true), oursClient(Options{}), clientConfig(t, false), rs, rc)
	if serr == nil || !strings.Contains(serr.Error(), "certificate") {
		t.Errorf("server handshake error %v, want one about the missing certificate", serr)
	}
}

// A KeyLogWriter of the caller's still gets every line.
func TestKeyLogForwarded(t *testing.T) {
	var log bytes.Buffer
	scfg := serverConfig(t, false)
	scfg.KeyLogWriter = &log
	s, c := connect(t, oursServer(Options{}), scfg, goClient, clientConfig(t, false))
	mustOurs(t, s)
	exchange(t, s, c, []int{1000}, nil, nil)
	for _, label := range []string{"CLIENT_HANDSHAKE_TRAFFIC_SECRET", clientTrafficLabel, serverTrafficLabel} {
		if !strings.Contains(log.String(), label+" ") {
			t.Errorf("key log lacks %s", label)
		}
	}
}

// A custom AEAD constructor is used for both directions.
func TestNewAEADOption(t *testing.T) {
	calls := 0
	o := Options{NewAEAD: func(key []byte) (cipher.AEAD, error) {
		calls++
		return defaultAEAD(key)
	}}
	s, c := connect(t, oursServer(o), serverConfig(t, false), goClient, clientConfig(t, false))
	mustOurs(t, s)
	if calls != 2 {
		t.Errorf("NewAEAD called %d times, want 2", calls)
	}
	exchange(t, s, c, []int{1, 20000}, nil, nil)

	failing := Options{NewAEAD: func([]byte) (cipher.AEAD, error) { return nil, errors.New("no cipher") }}
	rs, rc := tcpPair(t)
	_, _, serr, _ := handshakePair(t, oursServer(failing), serverConfig(t, false), goClient, clientConfig(t, false), rs, rc)
	if serr == nil || !strings.Contains(serr.Error(), "no cipher") {
		t.Errorf("server error %v, want the AEAD's", serr)
	}
}
