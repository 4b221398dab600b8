package kafkaconf

import (
	"context"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/infra/pki"
)

// TestTokenSource: a client-credentials token is fetched once and reused
// until four fifths of its lifetime, then fetched anew; a wrong secret is
// an error naming the endpoint's answer.
func TestTokenSource(t *testing.T) {
	idp, err := oauthidp.Start(oauthidp.Options{ClientID: "xp", ClientSecret: "pw", Lifetime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	ts := &tokenSource{url: idp.TokenURL(), id: "xp", secret: "pw", http: &http.Client{Timeout: 10 * time.Second}}
	ctx := context.Background()
	a, err := ts.token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ts.token(ctx)
	if a != b || idp.Issued() != 1 {
		t.Fatalf("a second token within the lifetime: same %v, issued %d; want the cached one", a == b, idp.Issued())
	}
	for deadline := time.Now().Add(5 * time.Second); idp.Issued() < 2; {
		if time.Now().After(deadline) {
			t.Fatal("no new token 5 s after a 1 s one was issued")
		}
		time.Sleep(100 * time.Millisecond) // waiting out the token's lifetime is the point
		if _, err := ts.token(ctx); err != nil {
			t.Fatal(err)
		}
	}
	bad := &tokenSource{url: idp.TokenURL(), id: "xp", secret: "wrong", http: &http.Client{Timeout: 10 * time.Second}}
	if _, err := bad.token(ctx); err == nil || !strings.Contains(err.Error(), "HTTP 401 invalid_client") {
		t.Errorf("wrong secret: %v", err)
	}
}

// TestTokenEndpointHTTPS: an https token endpoint is verified against
// ssl.ca.location, the brokers' CA (xp's identity provider on remote
// hosts has a certificate from it); without that CA the fetch fails at
// the TLS handshake and no token is issued.
func TestTokenEndpointHTTPS(t *testing.T) {
	ca, err := pki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Server("idp", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	idp, err := oauthidp.Start(oauthidp.Options{ClientID: "xp", ClientSecret: "pw", Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	props := func(ca string) map[string]string {
		return map[string]string{OAuthMethod: "oidc", OAuthTokenURL: idp.TokenURL(), OAuthClientID: "xp", OAuthClientSecret: "pw", SSLCALocation: ca}
	}
	for _, tc := range []struct {
		name, ca, wantErr string
		wantIssued        int64
	}{
		{"trusting the CA", ca.CAPath(), "", 1},
		{"trusting the system's roots", "", "certificate", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := oauthMechanism(props(tc.ca))
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = m.Authenticate(context.Background(), "127.0.0.1:9093")
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, want error %q", err, tc.wantErr)
			}
			if idp.Issued() != tc.wantIssued {
				t.Errorf("%d tokens issued, want %d", idp.Issued(), tc.wantIssued)
			}
		})
	}
}

// TestIdentityMechanisms: OAUTHBEARER and GSSAPI properties, happy and
// sad, as ClientOpts reads them and as the Java client's config writes
// them.
func TestIdentityMechanisms(t *testing.T) {
	dir := t.TempDir()
	a, err := pki.New(filepath.Join(dir, "pki"))
	if err != nil {
		t.Fatal(err)
	}
	ca := a.CAPath()
	base := map[string]string{SecurityProtocol: "sasl_ssl", BootstrapServers: "127.0.0.1:9095", SSLCALocation: ca}
	oauth := WithIdentity(base, "OAUTHBEARER", map[string]string{OAuthMethod: "oidc", OAuthTokenURL: "http://127.0.0.1:1/token",
		OAuthClientID: "xp", OAuthClientSecret: "pw"})
	krb5 := filepath.Join(dir, "krb5.conf")
	os.WriteFile(krb5, []byte("[libdefaults]\n default_realm = XP.TEST\n"), 0o600)
	gss := WithIdentity(base, "GSSAPI", map[string]string{KerberosPrincipal: "xp@XP.TEST", KerberosKeytab: filepath.Join(dir, "none.keytab"),
		KerberosKrb5Conf: krb5})
	edit := func(p map[string]string, k, v string) map[string]string {
		q := WithIdentity(p, p[SASLMechanism], nil)
		if v == "" {
			delete(q, k)
		} else {
			q[k] = v
		}
		return q
	}
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string // "" accepted
	}{
		{"oauthbearer", oauth, ""},
		{"oauthbearer without method", edit(oauth, OAuthMethod, ""), "sasl.oauthbearer.method"},
		{"oauthbearer default method", edit(oauth, OAuthMethod, "default"), "token endpoint only"},
		{"oauthbearer without secret", edit(oauth, OAuthClientSecret, ""), "sasl.oauthbearer.client.secret"},
		{"oauthbearer ftp url", edit(oauth, OAuthTokenURL, "ftp://x/token"), "want an http or https URL"},
		{"gssapi missing keytab file", gss, "none.keytab"},
		{"gssapi without krb5.conf", edit(gss, KerberosKrb5Conf, ""), "xp.kerberos.krb5.conf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ClientOpts(tc.props)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name   string
		props  map[string]string
		want   []string
		system map[string]string
	}{
		{"oauthbearer", oauth, []string{"sasl.mechanism=OAUTHBEARER",
			"sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
			"sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:1/token",
			`OAuthBearerLoginModule required clientId="xp" clientSecret="pw";`},
			map[string]string{AllowedURLsProperty: "http://127.0.0.1:1/token"}},
		{"gssapi", gss, []string{"sasl.mechanism=GSSAPI", "sasl.kerberos.service.name=kafka",
			`Krb5LoginModule required useKeyTab=true storeKey=true doNotPrompt=true keyTab="` + filepath.Join(dir, "none.keytab") + `" principal="xp@XP.TEST";`},
			map[string]string{"java.security.krb5.conf": krb5}},
		{"scram", edit(base, SASLMechanism, "SCRAM-SHA-256"), []string{"sasl.mechanism=SCRAM-SHA-256", "ScramLoginModule required"}, nil},
	} {
		t.Run("java "+tc.name, func(t *testing.T) {
			if got := JavaSystemProperties(tc.props); !maps.Equal(got, tc.system) {
				t.Errorf("JavaSystemProperties = %v, want %v", got, tc.system)
			}
			path := filepath.Join(dir, tc.name+".java.properties")
			if err := WriteJavaClientConfig(path, tc.props); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %q:\n%s", path, w, b)
				}
			}
		})
	}
}

// TestIdentityServer: OAUTHBEARER and GSSAPI join the SASL_SSL listener
// only when given, each broker with its own principal.
func TestIdentityServer(t *testing.T) {
	s := NewServer([]string{"127.0.0.2", "127.0.0.3"}, nil)
	s.SASLUser, s.SASLPassword, s.Keystore, s.Truststore, s.LogDirs = "xp", "pw", "/k.pem", "/ca.pem", "/data"
	plain, err := s.Properties(1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(plain), "OAUTHBEARER") || strings.Contains(string(plain), "GSSAPI") || strings.Contains(string(plain), "reauth") {
		t.Errorf("without OAuth and Kerberos:\n%s", plain)
	}
	s.OAuth = &OAuthServer{JWKSURL: "http://127.0.0.1:1/jwks", Issuer: "http://127.0.0.1:1", Audience: "xp-kafka", Truststore: "/pki/ca.pem"}
	s.Kerberos = &KerberosServer{ServiceName: "kafka", Realm: "XP.TEST", Keytab: "/b.keytab"}
	s.ReauthMs = 5000
	for id, addr := range map[int]string{1: "127.0.0.2", 2: "127.0.0.3"} {
		b, err := s.Properties(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{
			"listener.name.sasl_ssl.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER,GSSAPI",
			"listener.name.sasl_ssl.connections.max.reauth.ms=5000",
			"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:1/jwks",
			"listener.name.sasl_ssl.oauthbearer.sasl.oauthbearer.expected.audience=xp-kafka",
			`listener.name.sasl_ssl.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ssl.truststore.location="/pki/ca.pem" ssl.truststore.type="PEM" unsecuredLoginStringClaim_sub="unused-broker-login";`,
			`principal="kafka/` + addr + `@XP.TEST"`,
		} {
			if !strings.Contains(string(b), w) {
				t.Errorf("node %d lacks %q", id, w)
			}
		}
	}
}
