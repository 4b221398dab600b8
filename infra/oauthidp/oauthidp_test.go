package oauthidp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/pki"
)

// TestServer: the token endpoint issues, to its client only, ES256 JWTs
// with the claims Kafka's validator checks, which verify with the key the
// JWKS publishes; a token signed with another key does not.
func TestServer(t *testing.T) {
	s, err := Start(Options{ClientID: "xp", ClientSecret: "pw", Lifetime: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Issuer(), "http://127.0.0.1:") {
		t.Errorf("issuer %s: want loopback", s.Issuer())
	}
	grant := func(id, secret, grantType string) (*http.Response, map[string]any) {
		req, _ := http.NewRequest(http.MethodPost, s.TokenURL(), strings.NewReader(url.Values{"grant_type": {grantType}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	for _, tc := range []struct {
		name, id, secret, grant string
		code                    int
		errCode                 string
	}{
		{"wrong secret", "xp", "nope", "client_credentials", 401, "invalid_client"},
		{"wrong client", "other", "pw", "client_credentials", 401, "invalid_client"},
		{"password grant", "xp", "pw", "password", 400, "unsupported_grant_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := grant(tc.id, tc.secret, tc.grant)
			if resp.StatusCode != tc.code || body["error"] != tc.errCode || body["access_token"] != nil {
				t.Errorf("HTTP %d %v, want %d %s and no token", resp.StatusCode, body, tc.code, tc.errCode)
			}
		})
	}
	resp, body := grant("xp", "pw", "client_credentials")
	tok, _ := body["access_token"].(string)
	if resp.StatusCode != 200 || tok == "" || body["expires_in"] != float64(60) || s.Issued() != 1 {
		t.Fatalf("HTTP %d %v, issued %d", resp.StatusCode, body, s.Issued())
	}
	// The published key verifies the token.
	jr, err := http.Get(s.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	json.NewDecoder(jr.Body).Decode(&set)
	jr.Body.Close()
	if len(set.Keys) != 1 || set.Keys[0]["kty"] != "EC" || set.Keys[0]["alg"] != "ES256" || set.Keys[0]["kid"] == "" {
		t.Fatalf("key set %v", set)
	}
	coord := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			t.Fatalf("coordinate %q: %v", s, err)
		}
		return b
	}
	point := append(append([]byte{4}, coord(set.Keys[0]["x"])...), coord(set.Keys[0]["y"])...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		t.Fatalf("the key set's point is not on P-256: %v", err)
	}
	c, err := VerifyES256(pub, tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Issuer != s.Issuer() || c.Audience != Audience || c.Subject != "xp" || c.Expiry-c.IssuedAt != 60 {
		t.Errorf("claims %+v", c)
	}
	head, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	if !strings.Contains(string(head), `"kid":"`+set.Keys[0]["kid"]+`"`) {
		t.Errorf("header %s does not name the key set's kid", head)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	forged, err := SignES256(other, set.Keys[0]["kid"], c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyES256(pub, forged); err == nil {
		t.Error("a token signed with another key verified")
	}
}

// TestServerHTTPS: with a certificate the endpoints are HTTPS, the
// issuer and URLs say so, a client trusting the CA gets a token and one
// that does not is refused by its TLS; off loopback, plain HTTP is
// refused before anything listens.
func TestServerHTTPS(t *testing.T) {
	ca, err := pki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Server("idp", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{ClientID: "xp", ClientSecret: "pw", Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.Issuer(), "https://127.0.0.1:") || !strings.HasPrefix(s.TokenURL(), s.Issuer()) || !strings.HasPrefix(s.JWKSURL(), s.Issuer()) {
		t.Errorf("issuer %s, token %s, key set %s: want https", s.Issuer(), s.TokenURL(), s.JWKSURL())
	}
	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.CertPool()}}}
	req, _ := http.NewRequest(http.MethodPost, s.TokenURL(), strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("xp", "pw")
	resp, err := trusting.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || s.Issued() != 1 {
		t.Errorf("token over HTTPS: HTTP %d, issued %d", resp.StatusCode, s.Issued())
	}
	if _, err := http.Get(s.JWKSURL()); err == nil {
		t.Error("a client not trusting the CA fetched the key set")
	}
	for _, tc := range []struct{ name, listen, want string }{
		{"off loopback without a certificate", "192.0.2.1:0", "served over HTTPS only"},
		{"not host:port", "localhost", "listen \"localhost\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Start(Options{ClientID: "xp", ClientSecret: "pw", Listen: tc.listen}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
