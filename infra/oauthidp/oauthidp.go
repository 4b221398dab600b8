// Package oauthidp is the identity provider xp serves for a group of
// OAUTHBEARER runs: on loopback (the local target) or, over HTTPS, on a
// remote target's client host, a JSON Web Key Set (RFC 7517) the
// brokers validate tokens against (Kafka's
// OAuthBearerValidatorCallbackHandler, sasl.oauthbearer.jwks.endpoint.url)
// and an OAuth 2.0 token endpoint (RFC 6749 §4.4, client credentials) the
// clients fetch their tokens from (sasl.oauthbearer.token.endpoint.url).
// Tokens are JWTs signed ES256 (RFC 7518 §3.4) with a P-256 key that lives
// in this process's memory only and is never logged or written.
package oauthidp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Paths of the two endpoints under the server's URL.
const (
	JWKSPath  = "/jwks"
	TokenPath = "/token"
)

// Audience is the aud claim of every token, the brokers'
// sasl.oauthbearer.expected.audience.
const Audience = "xp-kafka"

// Options configure Start.
type Options struct {
	// ClientID and ClientSecret are the one client the token endpoint
	// knows (client_id and client_secret, by HTTP Basic authentication or
	// in the form). Required.
	ClientID, ClientSecret string
	// Lifetime is each token's, from issue to exp; default 1 hour. A short
	// one makes clients re-authenticate during a run (KIP-368).
	Lifetime time.Duration
	// Listen is the address served (host:port); default 127.0.0.1 on a
	// port of the system's choice.
	Listen string
	// CertFile and KeyFile, when set, serve HTTPS with that certificate
	// (PEM), so the client secret and the tokens never cross a network in
	// the clear; Listen other than loopback requires them.
	CertFile, KeyFile string
}

// Server is a running identity provider.
type Server struct {
	opts   Options
	key    *ecdsa.PrivateKey
	kid    string
	url    string
	srv    *http.Server
	ln     net.Listener
	issued atomic.Int64
}

// Start serves the endpoints on o.Listen (HTTPS with o's certificate)
// until Close.
func Start(o Options) (*Server, error) {
	if o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("oauthidp: a client id and secret are required")
	}
	if o.Lifetime <= 0 {
		o.Lifetime = time.Hour
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("oauthidp: listen %q: %w", o.Listen, err)
	}
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && o.CertFile == "" {
		return nil, fmt.Errorf("oauthidp: listen %q: off loopback the endpoints are served over HTTPS only; give a certificate and key", o.Listen)
	}
	scheme := "http"
	var cfg *tls.Config
	if o.CertFile != "" || o.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("oauthidp: %w", err)
		}
		scheme, cfg = "https", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, fmt.Errorf("oauthidp: %w", err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	s := &Server{opts: o, key: key, kid: keyID(&key.PublicKey), url: scheme + "://" + ln.Addr().String(), ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+JWKSPath, s.jwks)
	mux.HandleFunc("POST "+TokenPath, s.token)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Issuer is the iss claim of every token and the brokers'
// sasl.oauthbearer.expected.issuer: the server's base URL.
func (s *Server) Issuer() string { return s.url }

// JWKSURL is the key set's URL (sasl.oauthbearer.jwks.endpoint.url).
func (s *Server) JWKSURL() string { return s.url + JWKSPath }

// TokenURL is the token endpoint's (sasl.oauthbearer.token.endpoint.url).
func (s *Server) TokenURL() string { return s.url + TokenPath }

// Issued is the number of tokens issued so far.
func (s *Server) Issued() int64 { return s.issued.Load() }

// keyID names a public key: the first 8 bytes of the SHA-256 of its
// uncompressed point, in hex.
func keyID(pub *ecdsa.PublicKey) string {
	b, _ := pub.Bytes()
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	b, _ := s.key.PublicKey.Bytes() // 0x04 || X || Y, 32 bytes each
	enc := base64.RawURLEncoding.EncodeToString
	set := map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": s.kid,
		"x": enc(b[1:33]), "y": enc(b[33:65]),
	}}}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// token answers a client-credentials grant (RFC 6749 §4.4) with a bearer
// JWT for the client; a wrong client is 401 invalid_client.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"error": e})
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		fail(http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if subtle.ConstantTimeCompare([]byte(id), []byte(s.opts.ClientID)) != 1 ||
		subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) != 1 {
		fail(http.StatusUnauthorized, "invalid_client")
		return
	}
	tok, err := s.Sign(id, time.Now(), s.opts.Lifetime)
	if err != nil {
		fail(http.StatusInternalServerError, "server_error")
		return
	}
	s.issued.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
		"expires_in": int64(s.opts.Lifetime / time.Second)})
}

// Sign is a token for subject sub issued at iat for lifetime, signed with
// the server's key.
func (s *Server) Sign(sub string, iat time.Time, lifetime time.Duration) (string, error) {
	return SignES256(s.key, s.kid, Claims{Issuer: s.url, Audience: Audience, Subject: sub,
		IssuedAt: iat.Unix(), Expiry: iat.Add(lifetime).Unix(), Scope: "kafka"})
}

// Claims are the registered claims (RFC 7519 §4.1) of xp's tokens, and the
// scope Kafka's validator reads (sasl.oauthbearer.scope.claim.name).
type Claims struct {
	Issuer   string `json:"iss"`
	Audience string `json:"aud"`
	Subject  string `json:"sub"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
	Scope    string `json:"scope,omitempty"`
}

// SignES256 is the compact JWS (RFC 7515 §7.1) of c signed ES256 with key,
// naming kid in its header. Tests forge tokens with a key of their own.
func SignES256(key *ecdsa.PrivateKey, kid string, c Claims) (string, error) {
	enc := base64.RawURLEncoding.EncodeToString
	head, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT", "kid": kid})
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := enc(head) + "." + enc(body)
	sum := sha256.Sum256([]byte(input))
	r, sv, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		return "", err
	}
	// ES256's signature is R || S, each 32 bytes big-endian (RFC 7518 §3.4).
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return input + "." + enc(sig), nil
}

// VerifyES256 checks token's ES256 signature against pub and returns its
// claims; it does not judge the claims.
func VerifyES256(pub *ecdsa.PublicKey, token string) (Claims, error) {
	var c Claims
	dot1, dot2 := -1, -1
	for i := range token {
		if token[i] == '.' {
			if dot1 < 0 {
				dot1 = i
			} else if dot2 < 0 {
				dot2 = i
			} else {
				return c, errors.New("oauthidp: not a compact JWS")
			}
		}
	}
	if dot2 < 0 {
		return c, errors.New("oauthidp: not a compact JWS")
	}
	sig, err := base64.RawURLEncoding.DecodeString(token[dot2+1:])
	if err != nil || len(sig) != 64 {
		return c, errors.New("oauthidp: bad ES256 signature encoding")
	}
	sum := sha256.Sum256([]byte(token[:dot2]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, errors.New("oauthidp: signature does not verify")
	}
	body, err := base64.RawURLEncoding.DecodeString(token[dot1+1 : dot2])
	if err != nil {
		return c, err
	}
	return c, json.Unmarshal(body, &c)
}

// PublicKey is the key tokens are verified with (the one in JWKSURL's set).
func (s *Server) PublicKey() *ecdsa.PublicKey { return &s.key.PublicKey }
