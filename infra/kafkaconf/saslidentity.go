package kafkaconf

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/xp-bench/xp/infra/pki"
)

// Properties of OAUTHBEARER (librdkafka's names, sasl.oauthbearer.method
// oidc: a client-credentials grant at a token endpoint) and GSSAPI
// (librdkafka's, with a keytab; the krb5.conf is xp's own key, as
// librdkafka reads KRB5_CONFIG and the Java client
// -Djava.security.krb5.conf).
const (
	OAuthMethod         = "sasl.oauthbearer.method"
	OAuthTokenURL       = "sasl.oauthbearer.token.endpoint.url"
	OAuthClientID       = "sasl.oauthbearer.client.id"
	OAuthClientSecret   = "sasl.oauthbearer.client.secret"
	KerberosServiceName = "sasl.kerberos.service.name"
	KerberosPrincipal   = "sasl.kerberos.principal"
	KerberosKeytab      = "sasl.kerberos.keytab"
	KerberosKrb5Conf    = "xp.kerberos.krb5.conf"
)

// oauthMechanism is OAUTHBEARER with tokens from props' token endpoint
// (client credentials), each kept until a fifth of its lifetime remains
// and then fetched anew, so connections that re-authenticate (KIP-368:
// the broker ends a session at its token's expiry) present a fresh one.
func oauthMechanism(props map[string]string) (sasl.Mechanism, error) {
	if m := props[OAuthMethod]; !strings.EqualFold(m, "oidc") {
		return nil, propErr(OAuthMethod, "%q: xp fetches OAUTHBEARER tokens from a token endpoint only; set %s=oidc with %s, %s and %s", m, OAuthMethod, OAuthTokenURL, OAuthClientID, OAuthClientSecret)
	}
	for _, k := range []string{OAuthTokenURL, OAuthClientID, OAuthClientSecret} {
		if props[k] == "" {
			return nil, propErr(k, "OAUTHBEARER needs %s, %s and %s", OAuthTokenURL, OAuthClientID, OAuthClientSecret)
		}
	}
	u, err := url.Parse(props[OAuthTokenURL])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, propErr(OAuthTokenURL, "%q: want an http or https URL", props[OAuthTokenURL])
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if ca := OAuthTokenCA(props); ca != "" {
		pool, err := pki.LoadPool(ca)
		if err != nil {
			return nil, &PropertyError{SSLCALocation, err}
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	ts := &tokenSource{url: u.String(), id: props[OAuthClientID], secret: props[OAuthClientSecret], http: hc}
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := ts.token(ctx)
		return oauth.Auth{Token: tok}, err
	}), nil
}

// OAuthTokenCA is the CA file an https token endpoint of props is
// verified against, "" for the client's default roots: the CA the
// brokers' certificates are verified against (ssl.ca.location), as xp's
// identity provider on remote hosts has a certificate from it. Every
// client takes it: franz-go (oauthMechanism), the Java client (its login
// module's ssl.truststore.location) and librdkafka (https.ca.location).
func OAuthTokenCA(props map[string]string) string {
	if !strings.HasPrefix(strings.ToLower(props[OAuthTokenURL]), "https://") {
		return ""
	}
	return props[SSLCALocation]
}

// tokenSource fetches and caches client-credentials tokens.
type tokenSource struct {
	url, id, secret string
	http            *http.Client
	mu              sync.Mutex
	tok             string
	renew           time.Time
}

func (s *tokenSource) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.tok != "" && now.Before(s.renew) {
		return s.tok, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url,
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(s.id), url.QueryEscape(s.secret))
	resp, err := s.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("OAUTHBEARER token endpoint: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("OAUTHBEARER token endpoint: %w", err)
	}
	var r struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
		Error       string  `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil || resp.StatusCode != http.StatusOK || r.AccessToken == "" {
		return "", fmt.Errorf("OAUTHBEARER token endpoint %s: HTTP %d %s", s.url, resp.StatusCode, r.Error)
	}
	life := time.Duration(r.ExpiresIn * float64(time.Second))
	if life <= 0 {
		life = time.Minute
	}
	s.tok, s.renew = r.AccessToken, now.Add(life*4/5)
	return s.tok, nil
}

// kerberosMechanism is GSSAPI as props' principal, logged in from its
// keytab against the KDCs of the krb5.conf, for service
// sasl.kerberos.service.name (default "kafka") on each broker's host.
func kerberosMechanism(props map[string]string) (sasl.Mechanism, error) {
	for _, k := range []string{KerberosPrincipal, KerberosKeytab, KerberosKrb5Conf} {
		if props[k] == "" {
			return nil, propErr(k, "GSSAPI needs %s, %s and %s", KerberosPrincipal, KerberosKeytab, KerberosKrb5Conf)
		}
	}
	cfg, err := krbconfig.Load(props[KerberosKrb5Conf])
	if err != nil {
		return nil, propErr(KerberosKrb5Conf, "%v", err)
	}
	kt, err := keytab.Load(props[KerberosKeytab])
	if err != nil {
		return nil, propErr(KerberosKeytab, "%v", err)
	}
	user, realm, ok := strings.Cut(props[KerberosPrincipal], "@")
	if !ok {
		realm = cfg.LibDefaults.DefaultRealm
	}
	if user == "" || realm == "" {
		return nil, propErr(KerberosPrincipal, "%q: want name@REALM", props[KerberosPrincipal])
	}
	service := props[KerberosServiceName]
	if service == "" {
		service = "kafka"
	}
	return kerberos.Kerberos(func(ctx context.Context) (kerberos.Auth, error) {
		cl := client.NewWithKeytab(user, realm, kt, cfg, client.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			return kerberos.Auth{}, fmt.Errorf("GSSAPI login of %s@%s: %w", user, realm, err)
		}
		return kerberos.Auth{Client: cl, Service: service}, nil
	}), nil
}

// javaIdentitySASL sets, in the Java client's properties out, the
// OAUTHBEARER or GSSAPI login of props. The JVM needs the rest as
// flags: Kafka 4 fetches a token endpoint only when
// AllowedURLsFlag lists it, and GSSAPI reads the KDCs from
// -Djava.security.krb5.conf=props[KerberosKrb5Conf].
func javaIdentitySASL(out, props map[string]string, mech string) error {
	out["sasl.mechanism"] = mech
	switch mech {
	case "OAUTHBEARER":
		if _, err := oauthMechanism(props); err != nil {
			return err
		}
		out["sasl.login.callback.handler.class"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
		out[OAuthTokenURL] = props[OAuthTokenURL]
		jaas := fmt.Sprintf(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="%s" clientSecret="%s"`,
			jaasEscape(props[OAuthClientID]), jaasEscape(props[OAuthClientSecret]))
		if ca := OAuthTokenCA(props); ca != "" {
			// Kafka's token fetcher takes its TLS settings from the
			// login module's options, as the brokers' key set fetcher
			// does (OAuthServer.Truststore).
			jaas += fmt.Sprintf(` ssl.truststore.location="%s" ssl.truststore.type="PEM"`, jaasEscape(ca))
		}
		out["sasl.jaas.config"] = jaas + ";"
	case "GSSAPI":
		if props[KerberosPrincipal] == "" || props[KerberosKeytab] == "" {
			return propErr(KerberosPrincipal, "GSSAPI needs %s and %s", KerberosPrincipal, KerberosKeytab)
		}
		service := props[KerberosServiceName]
		if service == "" {
			service = "kafka"
		}
		out["sasl.kerberos.service.name"] = service
		out["sasl.jaas.config"] = fmt.Sprintf(`com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true doNotPrompt=true keyTab="%s" principal="%s";`,
			jaasEscape(props[KerberosKeytab]), jaasEscape(props[KerberosPrincipal]))
	}
	return nil
}

// WithIdentity is the SASL client config base (a sasl_ssl one, its user
// and password dropped) authenticating with mech (Kafka's name,
// OAUTHBEARER or GSSAPI) and identity's properties (OAuthMethod,
// OAuthTokenURL, ... or KerberosPrincipal, KerberosKeytab, ...).
func WithIdentity(base map[string]string, mech string, identity map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(identity))
	for k, v := range base {
		switch k {
		case SASLUsername, SASLPassword, SASLJAASConfig, SASLMechanisms:
		default:
			out[k] = v
		}
	}
	for k, v := range identity {
		out[k] = v
	}
	out[SASLMechanism] = mech
	return out
}
