package kafkaconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// Key and trust stores as the Java client reads them (ssl.keystore.*,
// ssl.truststore.*: JKS, PKCS12 or PEM), with well-kept readers for the
// binary formats: keystore-go for JKS, go-pkcs12 for PKCS#12.

// Store types (ssl.keystore.type, ssl.truststore.type).
const (
	StoreJKS    = "JKS"
	StorePKCS12 = "PKCS12"
	StorePEM    = "PEM"
)

// PropertyError is a problem with one property's value.
type PropertyError struct {
	Key string
	Err error
}

func (e *PropertyError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *PropertyError) Unwrap() error { return e.Err }

func propErr(key string, format string, a ...any) error {
	return &PropertyError{Key: key, Err: fmt.Errorf(format, a...)}
}

// storeType is typeKey's value, upper case; JKS when unset (Kafka's
// default for both stores).
func storeType(props map[string]string, typeKey string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(props[typeKey]))
	switch t {
	case "":
		return StoreJKS, nil
	case StoreJKS, StorePKCS12, StorePEM:
		return t, nil
	}
	return "", propErr(typeKey, "%q: want JKS, PKCS12 or PEM", props[typeKey])
}

// jksMagic starts every JKS file; a store of type JKS that lacks it is read
// as PKCS#12, as the Java runtime has done since Java 9
// (keystore.type.compat).
const jksMagic = 0xFEEDFEED

func isJKS(b []byte) bool { return len(b) >= 4 && binary.BigEndian.Uint32(b) == jksMagic }

// trustedRoots returns the certificates the Java client's trust store
// properties name, nil when they name none (then the system's roots are
// trusted, as the Java client trusts its runtime's cacerts).
func trustedRoots(props map[string]string) (*x509.CertPool, error) {
	loc, inline := props[SSLTruststoreLocation], props[SSLTruststoreCertificates]
	pass, hasPass := props[SSLTruststorePassword]
	if loc == "" && inline == "" {
		for _, k := range []string{SSLTruststorePassword, SSLTruststoreType} {
			if props[k] != "" {
				return nil, propErr(k, "is set but there is no %s or %s", SSLTruststoreLocation, SSLTruststoreCertificates)
			}
		}
		return nil, nil
	}
	typ, err := storeType(props, SSLTruststoreType)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	switch {
	case inline != "":
		if loc != "" {
			return nil, propErr(SSLTruststoreCertificates, "give either it or %s, not both", SSLTruststoreLocation)
		}
		if typ != StorePEM {
			return nil, propErr(SSLTruststoreType, "%s needs %s=PEM", SSLTruststoreCertificates, SSLTruststoreType)
		}
		if certs, err = pemCertificates([]byte(inline)); err != nil {
			return nil, &PropertyError{SSLTruststoreCertificates, err}
		}
	case typ == StorePEM:
		if hasPass && pass != "" {
			return nil, propErr(SSLTruststorePassword, "a PEM trust store has no password (the Java client refuses one); remove it")
		}
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, &PropertyError{SSLTruststoreLocation, err}
		}
		if certs, err = pemCertificates(b); err != nil {
			return nil, propErr(SSLTruststoreLocation, "%s: %v", loc, err)
		}
	default:
		if pass == "" {
			return nil, propErr(SSLTruststorePassword, "is not set: xp checks the %s trust store's integrity with it; set it", typ)
		}
		b, err := os.ReadFile(loc)
		if err != nil {
			return nil, &PropertyError{SSLTruststoreLocation, err}
		}
		if typ == StoreJKS && isJKS(b) {
			certs, err = jksTrusted(b, pass)
		} else {
			certs, err = pkcs12Trusted(b, pass)
		}
		if err != nil {
			return nil, propErr(SSLTruststoreLocation, "%s: %v", loc, err)
		}
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// jksTrusted returns a JKS store's trusted certificates and the first
// certificate of each key entry, as the Java runtime's trust manager
// takes them.
func jksTrusted(b []byte, pass string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(b), []byte(pass)); err != nil {
		return nil, fmt.Errorf("not a JKS store this password opens (%v)", err)
	}
	var out []*x509.Certificate
	for _, alias := range ks.Aliases() {
		var der []byte
		switch {
		case ks.IsTrustedCertificateEntry(alias):
			e, err := ks.GetTrustedCertificateEntry(alias)
			if err != nil {
				return nil, fmt.Errorf("entry %s: %v", alias, err)
			}
			der = e.Certificate.Content
		case ks.IsPrivateKeyEntry(alias):
			chain, err := ks.GetPrivateKeyEntryCertificateChain(alias)
			if err != nil || len(chain) == 0 {
				continue
			}
			der = chain[0].Content
		default:
			continue
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %v", alias, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no certificate")
	}
	return out, nil
}

// pkcs12Trusted returns a PKCS#12 store's trusted certificates (Java's
// trusted-certificate bags), or the certificate of its key entry.
func pkcs12Trusted(b []byte, pass string) ([]*x509.Certificate, error) {
	certs, err := pkcs12.DecodeTrustStore(b, pass)
	if err == nil && len(certs) > 0 {
		return certs, nil
	}
	_, leaf, _, err2 := pkcs12.DecodeChain(b, pass)
	if err2 == nil {
		return []*x509.Certificate{leaf}, nil
	}
	if err == nil {
		err = errors.New("holds no certificate")
	}
	return nil, fmt.Errorf("not a PKCS12 store this password opens (%v)", err)
}

func pemCertificates(b []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return out, nil
}

// clientCertificates returns the client certificates (with their keys) the
// properties name, in either dialect: librdkafka's ssl.certificate.location
// and ssl.key.location, or the Java client's key store; none when they
// name none.
func clientCertificates(props map[string]string) ([]tls.Certificate, error) {
	certLoc, keyLoc := props[SSLCertificate], props[SSLKey]
	storeLoc, inlineKey, inlineChain := props[SSLKeystoreLocation], props[SSLKeystoreKey], props[SSLKeystoreCertificateChain]
	keyPass := props[SSLKeyPassword]
	switch {
	case certLoc != "" || keyLoc != "":
		if storeLoc != "" || inlineKey != "" {
			return nil, propErr(SSLCertificate, "give a certificate and key either as files or as a key store, not both")
		}
		if certLoc == "" || keyLoc == "" {
			return nil, propErr(SSLCertificate, "a client certificate needs both a certificate and a key file (%s, %s)", SSLCertificate, SSLKey)
		}
		cb, err := os.ReadFile(certLoc)
		if err != nil {
			return nil, &PropertyError{SSLCertificate, err}
		}
		kb, err := os.ReadFile(keyLoc)
		if err != nil {
			return nil, &PropertyError{SSLKey, err}
		}
		c, err := pemPair(cb, kb, keyPass, SSLKey)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	case storeLoc == "" && inlineKey == "" && inlineChain == "":
		for _, k := range []string{SSLKeystorePassword, SSLKeystoreType, SSLKeyPassword} {
			if props[k] != "" {
				return nil, propErr(k, "is set but there is no key store (%s) or key (%s)", SSLKeystoreLocation, SSLKey)
			}
		}
		return nil, nil
	}
	typ, err := storeType(props, SSLKeystoreType)
	if err != nil {
		return nil, err
	}
	storePass := props[SSLKeystorePassword]
	if inlineKey != "" || inlineChain != "" {
		if storeLoc != "" {
			return nil, propErr(SSLKeystoreKey, "give either it or %s, not both", SSLKeystoreLocation)
		}
		if typ != StorePEM {
			return nil, propErr(SSLKeystoreType, "%s needs %s=PEM", SSLKeystoreKey, SSLKeystoreType)
		}
		if inlineKey == "" || inlineChain == "" {
			return nil, propErr(SSLKeystoreKey, "needs %s beside it (and the other way round)", SSLKeystoreCertificateChain)
		}
		c, err := pemPair([]byte(inlineChain), []byte(inlineKey), keyPass, SSLKeystoreKey)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	}
	b, err := os.ReadFile(storeLoc)
	if err != nil {
		return nil, &PropertyError{SSLKeystoreLocation, err}
	}
	if typ == StorePEM {
		if storePass != "" {
			return nil, propErr(SSLKeystorePassword, "a PEM key store has no store password, only %s for an encrypted key (the Java client refuses one); remove it", SSLKeyPassword)
		}
		c, err := pemPair(b, b, keyPass, SSLKeystoreLocation)
		if err != nil {
			return nil, err
		}
		return []tls.Certificate{c}, nil
	}
	if storePass == "" {
		return nil, propErr(SSLKeystorePassword, "is not set: a %s key store needs its password", typ)
	}
	if keyPass == "" {
		keyPass = storePass // the Java client's default
	}
	var certs []tls.Certificate
	if typ == StoreJKS && isJKS(b) {
		certs, err = jksKeys(b, storePass, keyPass)
	} else {
		certs, err = pkcs12Keys(b, storePass, keyPass)
	}
	if err != nil {
		return nil, propErr(SSLKeystoreLocation, "%s: %v", storeLoc, err)
	}
	return certs, nil
}

// jksKeys returns every private key entry of a JKS store with its chain.
func jksKeys(b []byte, storePass, keyPass string) ([]tls.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(b), []byte(storePass)); err != nil {
		return nil, fmt.Errorf("not a JKS store this password opens (%v)", err)
	}
	var out []tls.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPass))
		if err != nil {
			return nil, fmt.Errorf("key %s: %v (is %s right?)", alias, err, SSLKeyPassword)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("key %s: %v", alias, err)
		}
		var chain [][]byte
		for _, c := range e.CertificateChain {
			chain = append(chain, c.Content)
		}
		c, err := certificate(chain, key)
		if err != nil {
			return nil, fmt.Errorf("key %s: %v", alias, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("holds no private key entry")
	}
	return out, nil
}

// pkcs12Keys returns a PKCS#12 store's key with its chain.
func pkcs12Keys(b []byte, storePass, keyPass string) ([]tls.Certificate, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(b, storePass)
	if err != nil && keyPass != storePass {
		key, leaf, cas, err = pkcs12.DecodeChain(b, keyPass)
	}
	if err != nil {
		return nil, fmt.Errorf("not a PKCS12 key store this password opens (%v)", err)
	}
	chain := [][]byte{leaf.Raw}
	for _, c := range cas {
		chain = append(chain, c.Raw)
	}
	c, err := certificate(chain, key)
	if err != nil {
		return nil, err
	}
	return []tls.Certificate{c}, nil
}

// pemPair reads a certificate chain from certPEM and a private key from
// keyPEM (PKCS#8, encrypted with pass or not; PKCS#1 or SEC 1 unencrypted).
// keyKey names the property in errors.
func pemPair(certPEM, keyPEM []byte, pass, keyKey string) (tls.Certificate, error) {
	var chain [][]byte
	for rest := certPEM; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			chain = append(chain, blk.Bytes)
		}
	}
	if len(chain) == 0 {
		return tls.Certificate{}, propErr(keyKey, "no PEM certificate")
	}
	var key any
	for rest := keyPEM; key == nil; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return tls.Certificate{}, propErr(keyKey, "no PEM private key")
		}
		var err error
		switch {
		case blk.Type == "ENCRYPTED PRIVATE KEY":
			if pass == "" {
				return tls.Certificate{}, propErr(SSLKeyPassword, "the private key is encrypted: set %s", SSLKeyPassword)
			}
			key, err = pkcs8.ParsePKCS8PrivateKey(blk.Bytes, []byte(pass))
			if err != nil {
				return tls.Certificate{}, propErr(SSLKeyPassword, "does not decrypt the private key (%v)", err)
			}
		case blk.Headers["Proc-Type"] != "":
			return tls.Certificate{}, propErr(keyKey, "a legacy encrypted PEM key (Proc-Type): convert it to PKCS#8, "+
				"e.g. openssl pkcs8 -topk8 -in key.pem -out key-pkcs8.pem")
		case blk.Type == "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
		case blk.Type == "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
		case blk.Type == "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(blk.Bytes)
		}
		if err != nil {
			return tls.Certificate{}, propErr(keyKey, "private key: %v", err)
		}
	}
	c, err := certificate(chain, key)
	if err != nil {
		return tls.Certificate{}, propErr(keyKey, "%v", err)
	}
	return c, nil
}

// certificate makes a tls.Certificate of a DER chain (leaf first) and its
// key, checking that they belong together.
func certificate(chain [][]byte, key any) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return tls.Certificate{}, fmt.Errorf("unsupported private key type %T", key)
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return tls.Certificate{}, err
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if pub, ok := signer.Public().(equaler); !ok || !pub.Equal(leaf.PublicKey) {
		return tls.Certificate{}, fmt.Errorf("the private key does not belong to the certificate of %s", leaf.Subject)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: signer, Leaf: leaf}, nil
}
