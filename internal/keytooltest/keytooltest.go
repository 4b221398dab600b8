// Package keytooltest makes, for tests, the trust and key stores a Java
// Kafka client is given, with the JDK's own keytool (and openssl for the
// PKCS#12 bundle keytool imports a key from), so that the formats are the
// real ones. A missing tool fails the test, naming what to install.
package keytooltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Stores are the files Make writes, each protected by Password (the
// PEM key by KeyPassword, as PKCS#8).
type Stores struct {
	TrustJKS, TrustPKCS12 string
	KeyJKS, KeyPKCS12     string
	// KeyPEM holds the encrypted key and the certificate: a PEM key store.
	KeyPEM                string
	Password, KeyPassword string
}

// Make writes stores into dir: trust stores holding caPEM, and key stores
// holding certPEM with keyPEM (the client's certificate and key).
func Make(t testing.TB, dir, caPEM, certPEM, keyPEM string) Stores {
	t.Helper()
	for _, tool := range []string{"keytool", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("keytooltest: %s not on PATH: install openjdk-17-jdk-headless and openssl", tool)
		}
	}
	s := Stores{
		TrustJKS: filepath.Join(dir, "truststore.jks"), TrustPKCS12: filepath.Join(dir, "truststore.p12"),
		KeyJKS: filepath.Join(dir, "keystore.jks"), KeyPKCS12: filepath.Join(dir, "keystore.p12"),
		KeyPEM: filepath.Join(dir, "keystore.pem"), Password: "store-secret", KeyPassword: "key-secret",
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytooltest: %s %v: %v\n%s", name, args, err, out)
		}
	}
	for _, st := range []struct{ path, typ string }{{s.TrustJKS, "JKS"}, {s.TrustPKCS12, "PKCS12"}} {
		run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", caPEM, "-keystore", st.path,
			"-storetype", st.typ, "-storepass", s.Password)
	}
	run("openssl", "pkcs12", "-export", "-in", certPEM, "-inkey", keyPEM, "-certfile", caPEM, "-name", "client",
		"-out", s.KeyPKCS12, "-passout", "pass:"+s.Password)
	run("keytool", "-importkeystore", "-noprompt", "-srckeystore", s.KeyPKCS12, "-srcstoretype", "PKCS12",
		"-srcstorepass", s.Password, "-destkeystore", s.KeyJKS, "-deststoretype", "JKS", "-deststorepass", s.Password)
	enc := filepath.Join(dir, "key.enc.pem")
	run("openssl", "pkcs8", "-topk8", "-in", keyPEM, "-out", enc, "-passout", "pass:"+s.KeyPassword, "-v2", "aes-256-cbc")
	k, err := os.ReadFile(enc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.KeyPEM, append(k, c...), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}
