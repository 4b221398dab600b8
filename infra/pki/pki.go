// Package pki makes the certificates xp's clusters and gateways use: one
// certificate authority per directory, broker and gateway server
// certificates, and client certificates for mutual TLS. Everything is PEM
// (Kafka reads it with ssl.keystore.type=PEM) and written 0600.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"
)

// File names inside an authority's directory: copying both into another
// directory and opening it with New gives the same authority.
const (
	CACertFile = "ca.pem"
	CAKeyFile  = "ca-key.pem"
	caCertFile = CACertFile
	caKeyFile  = CAKeyFile
)

// Validity is how long issued certificates last; long enough for any
// campaign, short enough that a leaked one expires.
const Validity = 398 * 24 * time.Hour

// Authority is a certificate authority rooted in one directory. Reopening
// the same directory reuses its CA, so remote hosts and local runs share it.
//
// A directory holding the CA certificate without its key is an authority
// that cannot sign: the key stayed with whoever made the CA (xp on the
// operator's machine), who issued this host's certificates and uploaded
// them with the CA certificate. Such an authority hands out those
// certificates (Server, Gateway and Client return the files already
// there, after checking the CA signed them for the names and hosts
// asked for) and refuses to make any other.
type Authority struct {
	dir  string
	cert *x509.Certificate
	key  crypto.Signer
	mu   sync.Mutex
	// LeafKey is the key of the certificates it issues: KeyECDSAP256
	// (the default, ""), KeyRSA2048 or KeyRSA4096 (a row's tls_key). The
	// CA's own key stays ECDSA P-256.
	LeafKey string
}

// Keys of issued certificates (a row's tls_key levels).
const (
	KeyECDSAP256 = "ecdsa-p256"
	KeyRSA2048   = "rsa2048"
	KeyRSA4096   = "rsa4096"
)

// newLeafKey makes a private key of kind (LeafKey).
func newLeafKey(kind string) (crypto.Signer, error) {
	switch kind {
	case "", KeyECDSAP256:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case KeyRSA2048:
		return rsa.GenerateKey(rand.Reader, 2048)
	case KeyRSA4096:
		return rsa.GenerateKey(rand.Reader, 4096)
	}
	return nil, fmt.Errorf("key %q: want ecdsa-p256, rsa2048 or rsa4096", kind)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// New opens the authority in dir, creating dir (0700) and a fresh CA when
// none exists yet. A dir with the CA certificate but not its key opens as
// an authority that cannot sign (see Authority).
func New(dir string) (*Authority, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	a := &Authority{dir: dir}
	certPath, keyPath := a.CAPath(), filepath.Join(dir, caKeyFile)
	if _, err := os.Stat(certPath); err == nil {
		if _, err := os.Stat(keyPath); errors.Is(err, fs.ErrNotExist) {
			cert, err := loadCA(certPath)
			if err != nil {
				return nil, fmt.Errorf("pki: existing CA in %s: %w", dir, err)
			}
			a.cert = cert
			return a, nil
		}
		cert, key, err := loadPair(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("pki: existing CA in %s: %w", dir, err)
		}
		a.cert, a.key = cert, key
		return a, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "xp test CA", Organization: []string{"xp"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * Validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	cert, _ := x509.ParseCertificate(der)
	if err := writePair(certPath, keyPath, der, key); err != nil {
		return nil, err
	}
	a.cert, a.key = cert, key
	return a, nil
}

// CanSign says whether the authority holds its CA's key, so can issue
// certificates rather than only hand out those issued before.
func (a *Authority) CanSign() bool { return a.key != nil }

// Dir is the authority's directory.
func (a *Authority) Dir() string { return a.dir }

// CAPath is the CA certificate (PEM); the trust anchor clients and brokers
// load (Kafka: ssl.ca.location / ssl.truststore.location).
func (a *Authority) CAPath() string { return filepath.Join(a.dir, caCertFile) }

// CertPool returns a pool holding the CA certificate.
func (a *Authority) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(a.cert)
	return p
}

// Server issues (or reissues) a server certificate for name, valid for
// localhost, 127.0.0.1, ::1 and every extra host (DNS name or IP address).
// It returns the certificate and key paths, <name>.pem and <name>-key.pem.
func (a *Authority) Server(name string, hosts ...string) (certPath, keyPath string, err error) {
	all := append([]string{"localhost", "127.0.0.1", "::1", name}, hosts...)
	return a.issue(name, a.LeafKey, all, x509.ExtKeyUsageServerAuth)
}

// Gateway issues a certificate for a gateway: it serves clients and, for
// upstream mutual TLS, presents itself to brokers, so it is good for both.
func (a *Authority) Gateway(name string, hosts ...string) (certPath, keyPath string, err error) {
	return a.GatewayWithKey(name, a.LeafKey, hosts...)
}

// GatewayWithKey is Gateway with a key of kind (KeyECDSAP256 for "",
// KeyRSA2048, KeyRSA4096) whatever LeafKey says: a gateway takes a row's
// tls_key on an authority whose other certificates keep theirs.
func (a *Authority) GatewayWithKey(name, kind string, hosts ...string) (certPath, keyPath string, err error) {
	all := append([]string{"localhost", "127.0.0.1", "::1", name}, hosts...)
	return a.issue(name, kind, all, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
}

// Client issues a client certificate with common name name (the principal
// User:<name> in Kafka's default mapping) for mutual TLS.
func (a *Authority) Client(name string) (certPath, keyPath string, err error) {
	return a.issue(name, a.LeafKey, nil, x509.ExtKeyUsageClientAuth)
}

func (a *Authority) issue(name, kind string, hosts []string, usage ...x509.ExtKeyUsage) (string, string, error) {
	if !nameRE.MatchString(name) {
		return "", "", fmt.Errorf("pki: certificate name %q: use letters, digits, '.', '_' and '-' only", name)
	}
	if a.key == nil {
		return a.issued(name, hosts, usage)
	}
	key, err := newLeafKey(kind)
	if err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"xp"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  usage,
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return "", "", fmt.Errorf("pki: sign %s: %w", name, err)
	}
	certPath := filepath.Join(a.dir, name+".pem")
	keyPath := filepath.Join(a.dir, name+"-key.pem")
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := writePair(certPath, keyPath, der, key); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

// issued returns the certificate name that an authority without its key
// was given, <name>.pem and <name>-key.pem in its directory, once it is
// sure the CA signed it, it is still valid, its key matches, and it is
// good for every host and usage asked for: a certificate made for another
// address would fail only later, in a client's handshake.
func (a *Authority) issued(name string, hosts []string, usage []x509.ExtKeyUsage) (string, string, error) {
	certPath := filepath.Join(a.dir, name+".pem")
	keyPath := filepath.Join(a.dir, name+"-key.pem")
	refuse := func(why string, args ...any) (string, string, error) {
		return "", "", fmt.Errorf("pki: %s holds the CA certificate without its key, so certificate %s must be issued where the key is (and copied here with its key): %s",
			a.dir, name, fmt.Sprintf(why, args...))
	}
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return refuse("%v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return refuse("%v", err)
	}
	if err := cert.CheckSignatureFrom(a.cert); err != nil {
		return refuse("%s is not signed by %s: %v", certPath, a.CAPath(), err)
	}
	if now := time.Now(); now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return refuse("%s is valid from %s to %s only", certPath, cert.NotBefore.Format(time.RFC3339), cert.NotAfter.Format(time.RFC3339))
	}
	for _, h := range hosts {
		if h != "" && cert.VerifyHostname(h) != nil {
			return refuse("%s is not valid for host %s", certPath, h)
		}
	}
	for _, u := range usage {
		if !slices.Contains(cert.ExtKeyUsage, u) {
			return refuse("%s lacks extended key usage %v", certPath, u)
		}
	}
	return certPath, keyPath, nil
}

// Keystore writes <name>-keystore.pem: the private key of certificate name
// (as issued by Server, Gateway or Client), its certificate and the CA, in
// one 0600 file — what Kafka reads with ssl.keystore.type=PEM and
// ssl.keystore.location (unencrypted PKCS#8 key, so no ssl.key.password).
func (a *Authority) Keystore(name string) (string, error) {
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("pki: certificate name %q: use letters, digits, '.', '_' and '-' only", name)
	}
	var out []byte
	for _, f := range []string{name + "-key.pem", name + ".pem", caCertFile} {
		b, err := os.ReadFile(filepath.Join(a.dir, f))
		if err != nil {
			return "", fmt.Errorf("pki: keystore %s: %w", name, err)
		}
		out = append(out, b...)
	}
	path := filepath.Join(a.dir, name+"-keystore.pem")
	if err := writeFile(path, out); err != nil {
		return "", err
	}
	return path, nil
}

// ServerTLS is a server configuration presenting certPath/keyPath; with
// requireClient it demands a client certificate signed by the CA (mTLS).
func (a *Authority) ServerTLS(certPath, keyPath string, requireClient bool) (*tls.Config, error) {
	return ServerTLS(a.CAPath(), certPath, keyPath, requireClient)
}

// ClientTLS is a client configuration trusting the CA, presenting
// certPath/keyPath when both are non-empty.
func (a *Authority) ClientTLS(certPath, keyPath string) (*tls.Config, error) {
	return ClientTLS(a.CAPath(), certPath, keyPath, "")
}

// ServerTLS builds a server tls.Config from PEM files. With requireClient,
// clients must present a certificate that chains to caPath (Kafka:
// ssl.client.auth=required).
func ServerTLS(caPath, certPath, keyPath string, requireClient bool) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: load %s: %w", certPath, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	if requireClient {
		pool, err := LoadPool(caPath)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientTLS builds a client tls.Config trusting caPath (system roots when
// empty), presenting certPath/keyPath when given, and verifying serverName
// when non-empty (otherwise the dialled host).
func ClientTLS(caPath, certPath, keyPath, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caPath != "" {
		pool, err := LoadPool(caPath)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if certPath != "" || keyPath != "" {
		if certPath == "" || keyPath == "" {
			return nil, errors.New("pki: a client certificate needs both a certificate and a key file")
		}
		pair, err := tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("pki: load %s: %w", certPath, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// LoadPool reads a PEM bundle of CA certificates.
func LoadPool(caPath string) (*x509.CertPool, error) {
	b, err := os.ReadFile(caPath)
	if err != nil {
		return nil, fmt.Errorf("pki: CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("pki: CA file %s holds no PEM certificate", caPath)
	}
	return pool, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n
}

func writePair(certPath, keyPath string, der []byte, key crypto.Signer) error {
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})); err != nil {
		return err
	}
	return writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// writeFile writes 0600 atomically, so a reader never sees half a key.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pki-*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pki: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

// loadCA reads a CA certificate without its key.
func loadCA(certPath string) (*x509.Certificate, error) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s holds no PEM certificate", certPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certPath, err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%s is not a CA certificate", certPath)
	}
	return cert, nil
}

func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	if !cert.IsCA {
		return nil, nil, fmt.Errorf("%s is not a CA certificate", certPath)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: key cannot sign", keyPath)
	}
	return cert, signer, nil
}
