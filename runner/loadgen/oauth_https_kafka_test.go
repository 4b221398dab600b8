package loadgen

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/kafkatest"
	"github.com/xp-bench/xp/planner"
)

// TestOAuthTokenEndpointHTTPSOnKafka: with an https token endpoint whose
// certificate comes from a CA in the client config's ssl.ca.location (as
// xp's identity provider on the remote targets has one from the
// cluster's CA), each client fetches its OAUTHBEARER tokens over
// verified TLS: franz-go, the Java client (its login module's
// ssl.truststore.location) and librdkafka (https.ca.location) each run
// healthy on Apache Kafka 4, every record consumed, the identity
// provider issuing their tokens. The identity provider's CA is the
// test's own, in no system store, so a client that did not take it from
// the config could not fetch a token.
func TestOAuthTokenEndpointHTTPSOnKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca, err := pki.New(filepath.Join(dir, "idp-ca"))
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := ca.Server("idp", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	idp, err := oauthidp.Start(oauthidp.Options{ClientID: "xp", ClientSecret: "s3cret", Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key})
	if err != nil {
		t.Fatal(err)
	}
	defer idp.Close()
	c := kafkatest.Start(t, kafkatest.Options{Major: 4,
		OAuth: &kafkaconf.OAuthServer{JWKSURL: idp.JWKSURL(), Issuer: idp.Issuer(), Audience: oauthidp.Audience, Truststore: ca.CAPath()}})
	base, err := kafkaconf.ReadClientConfig(c.Modes()[planner.SecuritySASLSSL].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	brokersCA := base[kafkaconf.SSLCALocation]
	if brokersCA == "" {
		t.Fatalf("the sasl_ssl client config %v has no %s", base, kafkaconf.SSLCALocation)
	}
	// Both CAs in one file: the brokers' and the identity provider's.
	bundle := filepath.Join(dir, "bundle.pem")
	var pem []byte
	for _, f := range []string{brokersCA, ca.CAPath()} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pem = append(pem, b...)
	}
	if err := os.WriteFile(bundle, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	withCA := func(caFile string) map[string]string {
		p := kafkaconf.WithIdentity(base, "OAUTHBEARER", map[string]string{kafkaconf.OAuthMethod: "oidc",
			kafkaconf.OAuthTokenURL: idp.TokenURL(), kafkaconf.OAuthClientID: "xp", kafkaconf.OAuthClientSecret: "s3cret"})
		p = maps.Clone(p)
		p[kafkaconf.SSLCALocation] = caFile
		return p
	}
	jc, rk, cache := disttest.JavaClient(t), disttest.RdkafkaClient(t), t.TempDir()
	run := func(client, caFile string) (*Result, error) {
		cfg := quick(withCA(caFile))
		cfg.Client, cfg.JavaClient, cfg.RdkafkaClient, cfg.CacheDir = client, jc.Path, rk.Path, cache
		cfg.SASLMechanism, cfg.Rate, cfg.Warmup, cfg.Duration, cfg.Partitions = planner.SASLOAuthBearer, 500, 0, time.Second, 1
		return Run(ctx, cfg)
	}
	for _, client := range []string{planner.ClientFranzGo, planner.ClientJava, planner.ClientLibrdkafka} {
		t.Run(client, func(t *testing.T) {
			before := idp.Issued()
			res, err := run(client, bundle)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Published == 0 || res.Consumed != res.Published {
				t.Errorf("healthy %v %v, published %d consumed %d", res.Healthy, res.Reasons, res.Published, res.Consumed)
			}
			if idp.Issued() == before {
				t.Errorf("the identity provider issued no token to %s", client)
			}
		})
	}
}

// TestOAuthTokenCAWritten: an https token endpoint's CA reaches the
// config each external client reads (the Java client's login module
// options, librdkafka's https.ca.location), and an http one adds none.
// TestOAuthTokenEndpointHTTPSOnKafka shows they use it: its identity
// provider's CA is private, so no client reaches it without.
func TestOAuthTokenCAWritten(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.New(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		want      bool
	}{
		{"https", "https://127.0.0.1:8443/token", true},
		{"http", "http://127.0.0.1:8080/token", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			props := map[string]string{kafkaconf.SecurityProtocol: "SASL_SSL", kafkaconf.SSLCALocation: ca.CAPath(), kafkaconf.SASLMechanism: "OAUTHBEARER",
				kafkaconf.OAuthMethod: "oidc", kafkaconf.OAuthTokenURL: tc.url, kafkaconf.OAuthClientID: "xp", kafkaconf.OAuthClientSecret: "s3cret"}
			rk := filepath.Join(dir, tc.name+".rdkafka")
			if err := writeRdkafkaConfig(Config{SASLMechanism: planner.SASLOAuthBearer}, rk, props); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(rk)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), "https.ca.location="+ca.CAPath()+"\n"); got != tc.want {
				t.Errorf("librdkafka config:\n%s\nwant https.ca.location %v", b, tc.want)
			}
			jp := filepath.Join(dir, tc.name+".java")
			if err := kafkaconf.WriteJavaClientConfig(jp, props); err != nil {
				t.Fatal(err)
			}
			j, err := os.ReadFile(jp)
			if err != nil {
				t.Fatal(err)
			}
			want := `ssl.truststore.location="` + ca.CAPath() + `" ssl.truststore.type="PEM";` + "\n"
			if got := strings.Contains(string(j), want); got != tc.want {
				t.Errorf("Java client config:\n%s\nwant the login module's truststore %v", j, tc.want)
			}
		})
	}
}
