package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/planner"
)

// TestValidateRdkafka: client librdkafka takes its release and the
// security surface librdkafka can apply (SCRAM, PLAIN, OAUTHBEARER with a
// token endpoint), and refuses the rest by name with the reason.
func TestValidateRdkafka(t *testing.T) {
	sasl := map[string]string{kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SASLMechanism: "SCRAM-SHA-512",
		kafkaconf.SASLUsername: "u", kafkaconf.SASLPassword: "p"}
	oidc := maps.Clone(sasl)
	oidc[kafkaconf.OAuthMethod], oidc[kafkaconf.OAuthTokenURL] = "oidc", "http://127.0.0.1:9/token"
	oidc[kafkaconf.OAuthClientID], oidc[kafkaconf.OAuthClientSecret] = "c", "s"
	java := map[string]string{kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SASLMechanism: "SCRAM-SHA-512",
		kafkaconf.SASLJAASConfig: `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`}
	tests := []struct {
		name  string
		props map[string]string
		edit  func(*Config)
		want  string // "" accepted
	}{
		{"plaintext", map[string]string{}, nil, ""},
		{"scram-sha-512", sasl, func(c *Config) { c.SASLMechanism = planner.SASLScramSHA512 }, ""},
		{"scram-sha-256", sasl, func(c *Config) { c.SASLMechanism = planner.SASLScramSHA256 }, ""},
		{"plain", sasl, func(c *Config) { c.SASLMechanism = planner.SASLPlain }, ""},
		{"oauthbearer with a token endpoint", oidc, func(c *Config) { c.SASLMechanism = planner.SASLOAuthBearer }, ""},
		{"tls_version default", map[string]string{}, func(c *Config) { c.TLSVersion, c.TLSCipher = planner.TLSDefault, planner.TLSDefault }, ""},
		{"no release", map[string]string{}, func(c *Config) { c.RdkafkaClient = "" }, "--client librdkafka needs --rdkafka-client"},
		{"tls_version", map[string]string{}, func(c *Config) { c.TLSVersion = planner.TLSVersion12 }, "tls_version and tls_cipher cannot be applied: librdkafka has no setting for the TLS version"},
		{"tls_cipher", map[string]string{}, func(c *Config) { c.TLSVersion, c.TLSCipher = planner.TLSVersion13, planner.TLSCipherChaCha20 }, "tls_version and tls_cipher cannot be applied"},
		{"gssapi", sasl, func(c *Config) { c.SASLMechanism = planner.SASLGSSAPI }, "gssapi cannot be applied: the librdkafka of the release is built without GSSAPI"},
		{"oauthbearer without a token endpoint", sasl, func(c *Config) { c.SASLMechanism = planner.SASLOAuthBearer }, "oauthbearer needs a token endpoint"},
		{"churn", map[string]string{}, func(c *Config) { c.ConnectionChurn = 100 }, ""},
		{"a Java login", java, nil, "--client-config has sasl.jaas.config, which librdkafka does not read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Bootstrap: []string{"127.0.0.1:9"}, ClientConfig: tc.props, Client: planner.ClientLibrdkafka, RdkafkaClient: "out/dist/xp-rdkafka-client-2.16.0.tgz"}
			if tc.edit != nil {
				tc.edit(&c)
			}
			err := c.WithDefaults().Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want ErrConfig with %q", err, tc.want)
			}
		})
	}
}

// TestWriteRdkafkaConfig: the client config the librdkafka side reads is
// the run's, with the row's mechanism in place of the config's and the
// Java way to turn hostname checks off in librdkafka's words.
func TestWriteRdkafkaConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.properties")
	props := map[string]string{kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SASLMechanisms: "PLAIN", kafkaconf.SASLUsername: "u",
		kafkaconf.SASLPassword: "p", kafkaconf.SSLCALocation: "/ca.pem", kafkaconf.SSLEndpointIdentAlg: ""}
	if err := writeRdkafkaConfig(Config{SASLMechanism: planner.SASLScramSHA256}, path, props); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := kafkaconf.ParseClientConfig(b)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, mode %v; want 0600 (it holds a password)", path, err, fi.Mode().Perm())
	}
	want := map[string]string{kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SASLMechanism: "SCRAM-SHA-256", kafkaconf.SASLUsername: "u",
		kafkaconf.SASLPassword: "p", kafkaconf.SSLCALocation: "/ca.pem", kafkaconf.SSLEndpointIdentAlg: "none"}
	if !maps.Equal(m, want) {
		t.Errorf("written %v, want %v", m, want)
	}
	if props[kafkaconf.SASLMechanisms] != "PLAIN" {
		t.Error("the run's own properties were altered")
	}
}

// TestRdkafkaClientRuns: the librdkafka client on the embedded cluster: a
// fixed-rate run publishes exactly rate × duration records with intended
// times in the window, all consumed once with their digests intact, a
// histogram per second counting them, and names librdkafka with its
// version and how it was built; a closed-loop run with a window of 8 in
// flight publishes too. Both are healthy by the Go client's rules.
func TestRdkafkaClientRuns(t *testing.T) {
	c := cluster(t)
	rk := disttest.RdkafkaClient(t)
	cache := t.TempDir()
	t.Run("fixed rate", func(t *testing.T) {
		cfg := quick(props(t, c, planner.SecurityPlaintext))
		cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, rk.Path, cache
		cfg.Duration, cfg.Encoding = 2*time.Second, EncodingJSON
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Errors != 0 {
			t.Errorf("unhealthy: %v %v", res.Reasons, res.ErrorSamples)
		}
		if res.Published != 4000 || res.Consumed != 4000 || res.Duplicates != 0 || res.PublishRate != 2000 {
			t.Errorf("published %d (%.1f/s), consumed %d, duplicates %d: want 4000 at 2000/s, 4000, 0", res.Published, res.PublishRate, res.Consumed, res.Duplicates)
		}
		if res.Client.Name != planner.ClientLibrdkafka || res.Client.Version != "librdkafka "+rk.Version ||
			!strings.Contains(res.Client.Runtime, "make rdkafka-client from PyPI's confluent-kafka") || !strings.Contains(res.Client.Runtime, "sasl_scram") {
			t.Errorf("client %+v: want librdkafka %s, its features and how it was built", res.Client, rk.Version)
		}
		var n int64
		for _, iv := range res.Intervals {
			h, err := hdrhistogram.Decode(iv.SendDelay)
			if err != nil {
				t.Fatal(err)
			}
			n += h.TotalCount()
		}
		if len(res.Intervals) != 2 || n != 4000 {
			t.Errorf("%d seconds of send delay counting %d, want 2 counting 4000", len(res.Intervals), n)
		}
		if len(res.Series) < 2 || res.Series[0].Published+res.Series[1].Published == 0 {
			t.Errorf("series %+v: want the measured seconds", res.Series)
		}
		checkScheduling(t, res, 1)
	})
	t.Run("closed loop", func(t *testing.T) {
		cfg := quick(props(t, c, planner.SecurityPlaintext))
		cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, rk.Path, cache
		cfg.Rate, cfg.Concurrency, cfg.Warmup, cfg.Duration = 0, 8, 0, time.Second
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Published == 0 || res.Consumed != res.Published {
			t.Errorf("healthy %v %v: published %d, consumed %d", res.Healthy, res.Reasons, res.Published, res.Consumed)
		}
	})
	// Churn in the closed loop: each of two producers reopens its client
	// every 50 records, its window of records in flight acknowledged
	// first, so the reconnects are the records sent over 50, less at most
	// one share per producer (150 records or more make at least one).
	// acks 1: an idempotent producer's first records wait for its
	// producer id, which would leave a second of this loop few records.
	t.Run("closed loop churn", func(t *testing.T) {
		cfg := quick(props(t, c, planner.SecurityPlaintext))
		cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, rk.Path, cache
		cfg.Rate, cfg.Concurrency, cfg.Warmup, cfg.Duration, cfg.Producers, cfg.ConnectionChurn = 0, 8, 0, time.Second, 2, 50
		cfg.Acks = "1"
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Healthy || res.Published < 150 || res.Consumed != res.Published {
			t.Fatalf("healthy %v %v %v: published %d, consumed %d", res.Healthy, res.Reasons, res.ErrorSamples, res.Published, res.Consumed)
		}
		cn := res.Connections
		if cn == nil || cn.Churn != 50 || cn.Reconnects > res.Published/50 || cn.Reconnects < res.Published/50-2 || cn.Handshakes < cn.Reconnects-2 {
			t.Errorf("connections %+v for %d records, want %d reconnects (less at most 2), each with a handshake", cn, res.Published, res.Published/50)
		}
		t.Logf("closed loop churn: %d records, %d reconnects, %d handshakes, reconnect p50 %.1f ms", res.Published, cn.Reconnects, cn.Handshakes, cn.ReconnectMs.P50)
	})
}

// TestRdkafkaClientInterrupted: an interrupt during the measurement ends
// a client librdkafka run early, as it ends the others: its input closes,
// it stops sending, reports what it counted, and Run returns that partial
// result with the context's error.
func TestRdkafkaClientInterrupted(t *testing.T) {
	c := cluster(t)
	cfg := quick(props(t, c, planner.SecurityPlaintext))
	cfg.Client, cfg.RdkafkaClient, cfg.CacheDir = planner.ClientLibrdkafka, disttest.RdkafkaClient(t).Path, t.TempDir()
	cfg.Rate, cfg.Warmup, cfg.Duration = 200, 0, 5*time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var phases []string
	cfg.OnPhase = func(phase string, _ time.Time) {
		phases = append(phases, phase)
		if phase == "measure" {
			cancel()
		}
	}
	start := time.Now()
	res, err := Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Run: %v (result %v), want the partial result and context.Canceled", err, res != nil)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("the interrupted run took %v", took)
	}
	if res.Client.Name != planner.ClientLibrdkafka || res.Healthy {
		t.Errorf("client %q healthy %v: want librdkafka's partial, unhealthy result", res.Client.Name, res.Healthy)
	}
	if len(phases) == 0 || phases[0] != "measure" || slices.Contains(phases, "done") {
		t.Errorf("phases %v: want measure and no done", phases)
	}
}

// TestRdkafkaHistogramCodec: the librdkafka client's HDR histograms (its
// own C, 1 us to 60 s at 3 digits) decode with Go's hdrhistogram into
// exactly the histogram Go records from the same values: at the bucket
// boundaries, the range's ends, repeated values, a thousand log-uniform
// ones, and none; directly and through the packed form an old second
// takes (decoded and encoded again).
func TestRdkafkaHistogramCodec(t *testing.T) {
	home, err := rdkafkaClientHome(context.Background(), Config{RdkafkaClient: disttest.RdkafkaClient(t).Path, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var spread []int64
	for range 1000 {
		spread = append(spread, int64(math.Exp(rng.Float64()*math.Log(HistMaxUs))))
	}
	cases := map[string][]int64{
		"boundaries": {1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, 1 << 20, 59_999_999, 60_000_000},
		"repeated":   {700, 700, 700, 123456, 123456},
		"spread":     spread,
		"empty":      nil,
	}
	for name, values := range cases {
		for _, repack := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/repack=%v", name, repack), func(t *testing.T) {
				args := []string{"-encode-histogram"}
				want := NewHistogram()
				for _, v := range values {
					args = append(args, strconv.FormatInt(v, 10))
					if err := want.RecordValue(v); err != nil {
						t.Fatal(err)
					}
				}
				cmd := exec.Command(filepath.Join(home, release.RdkafkaClientBinary), args...)
				if repack {
					cmd.Env = append(os.Environ(), "XP_HDR_REPACK=1")
				}
				out, err := cmd.Output()
				if err != nil {
					t.Fatal(err)
				}
				got, err := hdrhistogram.Decode(bytes.TrimSpace(out))
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if !got.Equals(want) || got.TotalCount() != int64(len(values)) || got.Max() != want.Max() {
					t.Errorf("decoded %d values (max %d, p50 %d), want %d (max %d, p50 %d)", got.TotalCount(), got.Max(), got.ValueAtQuantile(50),
						want.TotalCount(), want.Max(), want.ValueAtQuantile(50))
				}
			})
		}
	}
}
