package oauthidp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
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
