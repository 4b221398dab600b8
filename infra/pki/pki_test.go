package pki

import (
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
