package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFilesAre0600AndCAIsReused(t *testing.T) {
	dir := t.TempDir()
	a, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := a.Server("broker-0", "kafka-0.internal", "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	ccert, ckey, err := a.Client("alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a.CAPath(), filepath.Join(dir, caKeyFile), cert, key, ccert, ckey} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	before, _ := os.ReadFile(a.CAPath())
	b, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(b.CAPath())
	if string(before) != string(after) {
		t.Error("reopening the directory made a new CA")
	}
	// SANs of the server certificate.
	pemBytes, _ := os.ReadFile(cert)
	blk, _ := pem.Decode(pemBytes)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "broker-0", "kafka-0.internal", "10.1.2.3"} {
		if err := c.VerifyHostname(h); err != nil {
			t.Errorf("server cert does not cover %s: %v", h, err)
		}
	}
	// The reopened authority signs with the same CA.
	xcert, _, err := b.Client("x")
	if err != nil {
		t.Fatal(err)
	}
	xpem, _ := os.ReadFile(xcert)
	xblk, _ := pem.Decode(xpem)
	xc, err := x509.ParseCertificate(xblk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := xc.Verify(x509.VerifyOptions{Roots: a.CertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("certificate from reopened authority does not chain to the original CA: %v", err)
	}
}

func TestBadName(t *testing.T) {
	a, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", "../evil", "a/b", " sp"} {
		if _, _, err := a.Server(name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

// TestHandshakes runs real TLS handshakes over loopback.
func TestHandshakes(t *testing.T) {
	dir := t.TempDir()
	a, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(filepath.Join(dir, "other"))
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, _ := a.Server("broker")
	ccert, ckey, _ := a.Client("client")
	foreignCert, foreignKey, _ := other.Client("mallory")

	cases := []struct {
		name          string
		requireClient bool
		caPath        string
		cert, key     string
		wantErr       string
	}{
		{"tls", false, a.CAPath(), "", "", ""},
		{"mtls", true, a.CAPath(), ccert, ckey, ""},
		{"mtls without client cert", true, a.CAPath(), "", "", "certificate required"},
		{"mtls with foreign client cert", true, a.CAPath(), foreignCert, foreignKey, "unknown certificate authority"},
		{"wrong CA", false, other.CAPath(), "", "", "certificate signed by unknown authority"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			scfg, err := a.ServerTLS(scert, skey, tc.requireClient)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			srvErr := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					srvErr <- err
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if err := c.(*tls.Conn).Handshake(); err != nil {
					srvErr <- err
					return
				}
				_, err = c.Write([]byte("ok"))
				srvErr <- err
			}()
			ccfg, err := ClientTLS(tc.caPath, tc.cert, tc.key, "")
			if err != nil {
				t.Fatal(err)
			}
			d := &net.Dialer{Timeout: 5 * time.Second}
			conn, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), ccfg)
			var got string
			if err == nil {
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				b, rerr := io.ReadAll(io.LimitReader(conn, 2))
				got = string(b)
				err = rerr
				conn.Close()
			}
			serr := <-srvErr
			if tc.wantErr == "" {
				if err != nil || serr != nil || got != "ok" {
					t.Fatalf("handshake failed: client %v, server %v, read %q", err, serr, got)
				}
				return
			}
			all := ""
			if err != nil {
				all += err.Error()
			}
			if serr != nil {
				all += " " + serr.Error()
			}
			if !strings.Contains(all, tc.wantErr) {
				t.Fatalf("want error containing %q, got client %v / server %v", tc.wantErr, err, serr)
			}
		})
	}
}

func TestClientTLSNeedsBothFiles(t *testing.T) {
	a, _ := New(t.TempDir())
	cert, _, _ := a.Client("c")
	if _, err := ClientTLS(a.CAPath(), cert, "", ""); err == nil {
		t.Fatal("certificate without key accepted")
	}
	if _, err := ClientTLS(filepath.Join(t.TempDir(), "missing.pem"), "", "", ""); err == nil {
		t.Fatal("missing CA file accepted")
	}
}

func TestKeystore(t *testing.T) {
	a, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Server("broker-1"); err != nil {
		t.Fatal(err)
	}
	path, err := a.Keystore("broker-1")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("keystore mode %v", st.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	pair, err := tls.X509KeyPair(b, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(pair.Certificate) != 2 {
		t.Fatalf("keystore chain has %d certificates, want leaf and CA", len(pair.Certificate))
	}
	var blocks []string
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		blocks = append(blocks, blk.Type)
	}
	if strings.Join(blocks, ",") != "PRIVATE KEY,CERTIFICATE,CERTIFICATE" {
		t.Fatalf("keystore blocks %v", blocks)
	}
	if _, err := a.Keystore("never-issued"); err == nil {
		t.Fatal("keystore for a name never issued")
	}
}

// TestWithoutCAKey: a directory given the CA certificate and certificates
// issued elsewhere, but not the CA's key, hands out exactly those
// certificates, and refuses to make any other or one that does not fit.
func TestWithoutCAKey(t *testing.T) {
	op, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, err := op.Server("broker", "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	ccert, ckey, err := op.Client("client")
	if err != nil {
		t.Fatal(err)
	}
	host := t.TempDir()
	copyFile := func(src, name string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(host, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(op.CAPath(), CACertFile)
	copyFile(scert, "broker.pem")
	copyFile(skey, "broker-key.pem")
	copyFile(ccert, "client.pem")
	copyFile(ckey, "client-key.pem")
	// A certificate of another CA, under the name of one this CA issued.
	other, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ocert, okey, err := other.Gateway("gateway-proxy")
	if err != nil {
		t.Fatal(err)
	}
	copyFile(ocert, "gateway-proxy.pem")
	copyFile(okey, "gateway-proxy-key.pem")

	a, err := New(host)
	if err != nil {
		t.Fatal(err)
	}
	if a.CanSign() || !op.CanSign() {
		t.Fatalf("CanSign: host %v, operator %v; want false, true", a.CanSign(), op.CanSign())
	}
	if _, err := os.Stat(filepath.Join(host, CAKeyFile)); err == nil {
		t.Fatal("opening the directory made a CA key")
	}
	gotCert, gotKey, err := a.Server("broker", "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if gotCert != filepath.Join(host, "broker.pem") || gotKey != filepath.Join(host, "broker-key.pem") {
		t.Errorf("Server: %s %s, want the uploaded pair", gotCert, gotKey)
	}
	if _, _, err := a.Client("client"); err != nil {
		t.Fatal(err)
	}
	// The certificates serve a handshake as the ones the operator made do.
	srv, err := a.ServerTLS(gotCert, gotKey, true)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ClientTLS(a.CAPath(), filepath.Join(host, "client.pem"), filepath.Join(host, "client-key.pem"), "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(srv, cli); err != nil {
		t.Fatalf("handshake with the uploaded certificates: %v", err)
	}

	for _, tc := range []struct {
		what  string
		issue func() (string, string, error)
		want  string
	}{
		{"another host", func() (string, string, error) { return a.Server("broker", "10.9.9.9") }, "not valid for host 10.9.9.9"},
		{"a server certificate as a client's", func() (string, string, error) { return a.Client("broker") }, "lacks extended key usage"},
		{"a certificate never uploaded", func() (string, string, error) { return a.Gateway("gateway-encrypt") }, "gateway-encrypt.pem: no such file"},
		{"another CA's certificate", func() (string, string, error) { return a.Gateway("gateway-proxy") }, "is not signed by"},
	} {
		_, _, err := tc.issue()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "without its key") {
			t.Errorf("%s: %v, want an error naming %q", tc.what, err, tc.want)
		}
	}
}

// handshake runs one TLS handshake between srv and cli over a pipe.
func handshake(srv, cli *tls.Config) error {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	go func() { errc <- tls.Server(a, srv).Handshake() }()
	cerr := tls.Client(b, cli).Handshake()
	if cerr != nil {
		b.Close()
	}
	serr := <-errc
	if cerr != nil {
		return cerr
	}
	return serr
}

// TestLeafKey: the authority issues leaf certificates with the key a
// row's tls_key names, still signed by its ECDSA CA and usable by
// crypto/tls; GatewayWithKey's kind overrides it; an unknown kind is
// refused.
func TestLeafKey(t *testing.T) {
	a, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind string
		bits int // 0: ECDSA P-256
	}{{"", 0}, {KeyECDSAP256, 0}, {KeyRSA2048, 2048}, {KeyRSA4096, 4096}} {
		a.LeafKey = tc.kind
		certPath, keyPath, err := a.Server("broker-" + strings.ReplaceAll(tc.kind+"x", "-", ""))
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(pair.Certificate[0])
		switch k := cert.PublicKey.(type) {
		case *rsa.PublicKey:
			if k.N.BitLen() != tc.bits {
				t.Errorf("%q: RSA %d bits, want %d", tc.kind, k.N.BitLen(), tc.bits)
			}
		case *ecdsa.PublicKey:
			if tc.bits != 0 || k.Curve != elliptic.P256() {
				t.Errorf("%q: ECDSA %s", tc.kind, k.Curve.Params().Name)
			}
		}
		if err := cert.CheckSignatureFrom(a.cert); err != nil {
			t.Errorf("%q: %v", tc.kind, err)
		}
	}
	// GatewayWithKey takes its own kind whatever LeafKey says.
	a.LeafKey = KeyECDSAP256
	certPath, keyPath, err := a.GatewayWithKey("gateway-rsa", KeyRSA2048)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := pair.Leaf.PublicKey.(*rsa.PublicKey); !ok || k.N.BitLen() != 2048 {
		t.Errorf("GatewayWithKey rsa2048 on an ECDSA authority: key %T", pair.Leaf.PublicKey)
	}
	a.LeafKey = "dsa1024"
	if _, _, err := a.Server("bad"); err == nil || !strings.Contains(err.Error(), `key "dsa1024"`) {
		t.Errorf("unknown key: %v", err)
	}
}
