package kafkaconf

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/internal/keytooltest"
)

func TestParseJavaProperties(t *testing.T) {
	text := "# a comment\n" +
		"! another\n" +
		"bootstrap.servers = a:9092,b:9092\n" +
		"security.protocol:SASL_SSL\n" +
		"sasl.mechanism SCRAM-SHA-512\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
		"    username=\"alice\" \\\n" +
		"    password=\"p\\\\w=d\";\n" +
		"\n" +
		"client.id=caf\\u00e9\\tx\n" +
		"ssl.truststore.location=C\\:\\\\x\n"
	got, err := ParseProperties([]byte(text), DialectJava)
	if err != nil {
		t.Fatal(err)
	}
	want := []Property{
		{"bootstrap.servers", "a:9092,b:9092", 3},
		{"security.protocol", "SASL_SSL", 4},
		{"sasl.mechanism", "SCRAM-SHA-512", 5},
		{"sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p\w=d";`, 6},
		{"client.id", "café\tx", 10},
		{"ssl.truststore.location", `C:\x`, 11},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if _, err := ParseProperties([]byte("a=\\u12\n"), DialectJava); err == nil || !strings.HasPrefix(err.Error(), "1: a:") {
		t.Fatalf("bad escape: %v", err)
	}
}

func TestParseJAAS(t *testing.T) {
	cases := []struct {
		name, text string
		want       jaasLogin
		err        string
	}{
		{"scram", ScramLoginModule + ` required username="alice" password="s3cr;t";`, jaasLogin{ScramLoginModule, "alice", "s3cr;t"}, ""},
		{"plain bare words", PlainLoginModule + " required username=bob password=pw;", jaasLogin{PlainLoginModule, "bob", "pw"}, ""},
		{"escaped quote", PlainLoginModule + ` required username="b" password="a\"b";`, jaasLogin{PlainLoginModule, "b", `a"b`}, ""},
		{"no semicolon", PlainLoginModule + ` required username="b" password="c"`, jaasLogin{}, "no ';'"},
		{"kerberos", "com.sun.security.auth.module.Krb5LoginModule required;", jaasLogin{}, "is not supported"},
		{"two modules", PlainLoginModule + ` required username="a" password="b"; ` + PlainLoginModule + ` required;`, jaasLogin{}, "more than one"},
		{"unknown option", ScramLoginModule + ` required username="a" password="b" tokenauth="true";`, jaasLogin{}, "delegation tokens"},
		{"no flag", ScramLoginModule + ` username="a" password="b";`, jaasLogin{}, "control flag"},
		{"no password", ScramLoginModule + ` required username="a";`, jaasLogin{}, "needs username"},
		{"open quote", ScramLoginModule + ` required username="a;`, jaasLogin{}, "not closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseJAAS(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestLoadClientConfigRefuses: every property xp would not honour is an
// error at its line, never ignored.
func TestLoadClientConfigRefuses(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"typo", "security.protocol=SSL\nssl.trustore.location=/t.jks\n",
			`:2: unknown property "ssl.trustore.location"; did you mean "ssl.truststore.location"?`},
		{"producer setting", "bootstrap.servers=a:1\nacks=all\n", ":2: acks is not supported: not a setting of how to reach the cluster"},
		{"kinit", "security.protocol=SASL_SSL\nsasl.kerberos.kinit.cmd=kinit\n", ":2: sasl.kerberos.kinit.cmd is not supported: Kerberos (GSSAPI) logs in"},
		{"cipher suites", "ssl.cipher.suites=TLS_AES_128_GCM_SHA256\n", ":1: ssl.cipher.suites is not supported"},
		{"twice", "security.protocol=SSL\nsecurity.protocol=PLAINTEXT\n", ":2: security.protocol is given twice (first at line 1)"},
		{"two dialects", "ssl.truststore.location=/t.jks\nssl.ca.location=/ca.pem\n",
			":2: ssl.ca.location is librdkafka's, but line 1's ssl.truststore.location is the Java client's"},
		{"no value", "security.protocol\n", ":1: security.protocol has no value"},
		{"empty value", "bootstrap.servers=k:9092\nssl.truststore.location=\n", ":2: ssl.truststore.location has no value"},
		{"not a property", "bootstrap.servers=k:9092\n=x\n", ":2: want name=value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.properties")
			os.WriteFile(path, []byte(tc.text), 0o600)
			_, err := LoadClientConfig(path)
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Fatalf("error %v, want %q", err, path+tc.want)
			}
		})
	}
}

// TestJavaClientConfigsConnect connects with Java client configs whose
// stores keytool made (JKS, PKCS12) or that are PEM, to kfake clusters
// speaking TLS, TLS with client certificates, and SCRAM over TLS; and
// checks that the errors of a wrong one name its line.
func TestJavaClientConfigsConnect(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, _ := a.Server("broker", "127.0.0.1")
	ccert, ckey, _ := a.Client("client")
	st := keytooltest.Make(t, dir, a.CAPath(), ccert, ckey)
	serverTLS, _ := a.ServerTLS(scert, skey, false)
	mtlsTLS, _ := a.ServerTLS(scert, skey, true)
	tlsC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS))
	defer tlsC.Close()
	mtlsC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(mtlsTLS))
	defer mtlsC.Close()
	saslC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "alice", "alice-secret"), kfake.Superuser("PLAIN", "bob", "bob-secret"))
	defer saslC.Close()
	caPEM, _ := os.ReadFile(a.CAPath())
	inlineCA := strings.ReplaceAll(strings.TrimSpace(string(caPEM)), "\n", "\\n\\\n")

	trust := func(path, typ string) string {
		return "ssl.truststore.location=" + path + "\nssl.truststore.password=" + st.Password + "\nssl.truststore.type=" + typ + "\n"
	}
	cases := []struct {
		name, addr, text string
		wantErr          string // of Check, at a line
		noConnect        bool   // the server refuses it
	}{
		{"tls jks truststore", tlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS"), "", false},
		{"tls pkcs12 truststore", tlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustPKCS12, "PKCS12"), "", false},
		{"tls pkcs12 read as jks", tlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustPKCS12, "JKS"), "", false},
		{"tls pem truststore", tlsC.ListenAddrs()[0], "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=" + a.CAPath() + "\n", "", false},
		{"tls inline pem", tlsC.ListenAddrs()[0], "security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.certificates=" + inlineCA + "\n", "", false},
		{"mtls jks keystore", mtlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS") +
			"ssl.keystore.location=" + st.KeyJKS + "\nssl.keystore.password=" + st.Password + "\nssl.key.password=" + st.Password + "\n", "", false},
		{"mtls pkcs12 keystore", mtlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS") +
			"ssl.keystore.type=PKCS12\nssl.keystore.location=" + st.KeyPKCS12 + "\nssl.keystore.password=" + st.Password + "\n", "", false},
		{"mtls pem keystore, encrypted key", mtlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS") +
			"ssl.keystore.type=PEM\nssl.keystore.location=" + st.KeyPEM + "\nssl.key.password=" + st.KeyPassword + "\n", "", false},
		{"mtls without keystore", mtlsC.ListenAddrs()[0], "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS"), "", true},
		{"scram jaas", saslC.ListenAddrs()[0], "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=" + ScramLoginModule + " required \\\n  username=\"alice\" \\\n  password=\"alice-secret\";\n", "", false},
		{"plain jaas", saslC.ListenAddrs()[0], "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + trust(st.TrustPKCS12, "PKCS12") +
			"sasl.jaas.config=" + PlainLoginModule + " required username=\"bob\" password=\"bob-secret\";\n", "", false},
		{"scram wrong password", saslC.ListenAddrs()[0], "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=" + ScramLoginModule + " required username=\"alice\" password=\"nope\";\n", "", true},
		{"wrong truststore password", "", "security.protocol=SSL\nssl.truststore.location=" + st.TrustJKS + "\nssl.truststore.password=wrong\n",
			":2: ssl.truststore.location: " + st.TrustJKS + ": not a JKS store this password opens", false},
		{"truststore without password", "", "security.protocol=SSL\nssl.truststore.location=" + st.TrustJKS + "\n",
			"ssl.truststore.password: is not set", false},
		{"wrong key password", "", "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS") + "ssl.keystore.location=" + st.KeyPEM +
			"\nssl.keystore.type=PEM\nssl.key.password=wrong\n", ":7: ssl.key.password: does not decrypt", false},
		{"mechanism missing", "", "security.protocol=SASL_SSL\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=" + PlainLoginModule + " required username=\"a\" password=\"b\";\n", ":5: sasl.jaas.config: sasl.mechanism is not set: the Java client's default, GSSAPI", false},
		{"mechanism against module", "", "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=" + ScramLoginModule + " required username=\"a\" password=\"b\";\n", ":2: sasl.mechanism: PLAIN does not go with", false},
		{"jaas with plaintext", "", "security.protocol=SSL\n" + trust(st.TrustJKS, "JKS") +
			"sasl.jaas.config=" + ScramLoginModule + " required username=\"a\" password=\"b\";\n", ":5: sasl.jaas.config: sasl settings given but security.protocol=ssl", false},
		{"truststore with plaintext", "", "security.protocol=PLAINTEXT\n" + trust(st.TrustJKS, "JKS"), ":2: ssl.truststore.location: is set but security.protocol=plaintext does not use TLS", false},
		{"tls 1.1", "", "security.protocol=SSL\nssl.enabled.protocols=TLSv1.2,TLSv1.1\n" + trust(st.TrustJKS, "JKS"), ":2: ssl.enabled.protocols: \"TLSv1.1\"", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "client.properties")
			text := tc.text
			if tc.addr != "" {
				text = "bootstrap.servers=" + tc.addr + "\n" + text
			}
			os.WriteFile(path, []byte(text), 0o600)
			f, err := LoadClientConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if f.Dialect != DialectJava {
				t.Fatalf("dialect %s, want java", f.Dialect)
			}
			err = f.Check()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), "client config "+path) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one naming %s and %q", err, path, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			opts, _ := ClientOpts(f.Map())
			cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); (err != nil) != tc.noConnect {
				t.Fatalf("ping: %v; want an error: %v", err, tc.noConnect)
			}
		})
	}
}

// TestJavaTLSVersions: ssl.enabled.protocols and ssl.protocol bound the
// versions offered.
func TestJavaTLSVersions(t *testing.T) {
	for _, tc := range []struct {
		props  map[string]string
		lo, hi uint16
	}{
		{map[string]string{}, tls.VersionTLS12, tls.VersionTLS13},
		{map[string]string{SSLEnabledProtocols: "TLSv1.3"}, tls.VersionTLS13, tls.VersionTLS13},
		{map[string]string{SSLProtocol: "TLSv1.2"}, tls.VersionTLS12, tls.VersionTLS12},
	} {
		lo, hi, err := tlsVersions(tc.props)
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("%v: %x..%x, %v; want %x..%x", tc.props, lo, hi, err, tc.lo, tc.hi)
		}
	}
}

// TestRedacted: no secret of either dialect survives.
func TestRedacted(t *testing.T) {
	props := map[string]string{SASLPassword: "a", SASLJAASConfig: "b", SSLKeystorePassword: "c", SSLTruststorePassword: "d",
		SSLKeyPassword: "e", SSLKeystoreKey: "f", SecurityProtocol: "SSL"}
	for k, v := range Redacted(props) {
		if k != SecurityProtocol && v != "[redacted]" {
			t.Errorf("%s = %q", k, v)
		}
	}
}

// TestRelativePaths: a relative store path is taken from the config
// file's directory.
func TestRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.properties")
	os.WriteFile(path, []byte("security.protocol=SSL\nssl.truststore.location=certs/t.jks\nssl.truststore.password=x\n"), 0o600)
	f, err := LoadClientConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Map()[SSLTruststoreLocation]; got != filepath.Join(dir, "certs", "t.jks") {
		t.Fatalf("%s", got)
	}
}

// TestJavaClientConfigRoundTrip: what WriteJavaClientConfig writes for
// Kafka's own tools, LoadClientConfig reads back as the same connection
// (a contract between writer and reader), and it connects.
func TestJavaClientConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	scert, skey, _ := a.Server("broker", "127.0.0.1")
	ccert, ckey, _ := a.Client("client")
	mtlsTLS, _ := a.ServerTLS(scert, skey, true)
	serverTLS, _ := a.ServerTLS(scert, skey, false)
	mtlsC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(mtlsTLS))
	defer mtlsC.Close()
	saslC := kfake.MustCluster(kfake.NumBrokers(1), kfake.TLS(serverTLS), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "u", `p\w"d`))
	defer saslC.Close()
	for _, tc := range []struct {
		name  string
		addr  string
		props map[string]string
	}{
		{"mtls", mtlsC.ListenAddrs()[0], map[string]string{SecurityProtocol: "ssl", SSLCALocation: a.CAPath(), SSLCertificate: ccert, SSLKey: ckey}},
		{"scram", saslC.ListenAddrs()[0], map[string]string{SecurityProtocol: "sasl_ssl", SSLCALocation: a.CAPath(),
			SASLMechanism: "SCRAM-SHA-512", SASLUsername: "u", SASLPassword: `p\w"d`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "java.properties")
			if err := WriteJavaClientConfig(path, tc.props); err != nil {
				t.Fatal(err)
			}
			f, err := LoadClientConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Check(); err != nil {
				t.Fatal(err)
			}
			props := f.Map()
			props[BootstrapServers] = tc.addr
			opts, _ := ClientOpts(props)
			cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("%v\n%s", err, mustRead(t, path))
			}
		})
	}
}

func mustRead(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
