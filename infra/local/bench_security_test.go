package local

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// BenchmarkSecurityModesEndToEnd runs the load generator at a fixed rate of
// 1 KiB records (acks all, one consumer group) through each way of reaching
// the embedded cluster, side by side on one cluster: the tls direct mode,
// and xp's gateway over tls as proxy, encrypt and field_encrypt of the
// field ssn in JSON, Avro and Protobuf records, each gateway on the
// default crypto (std: crypto/tls and crypto/cipher), and proxy, encrypt
// and field_encrypt/json again with crypto fast (the *_fast rows: xp's TLS
// 1.3 record layer and VAES AES-GCM where this binary and CPU allow).
// Publish and end-to-end p50/p99 show what each layer adds. Every run must
// be healthy, which includes the per-record digest check of the gateway's
// round trip.
func BenchmarkSecurityModesEndToEnd(b *testing.B) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Brokers: 1, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	schemas := b.TempDir()
	for _, name := range []string{"record.avsc", "record.pb"} {
		raw, err := fs.ReadFile(loadgen.Schema, "schema/"+name)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(schemas, name), raw, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct{ name, security, encoding, crypto string }{
		{"direct_tls/json", "", "json", ""},
		{"proxy/json", planner.SecurityProxy, "json", ""},
		{"encrypt/json", planner.SecurityEncrypt, "json", ""},
		{"field_encrypt/json", planner.SecurityFieldEncrypt, "json", ""},
		{"field_encrypt/avro", planner.SecurityFieldEncrypt, "avro", ""},
		{"field_encrypt/protobuf", planner.SecurityFieldEncrypt, "protobuf", ""},
		{"proxy_fast/json", planner.SecurityProxy, "json", planner.GatewayCryptoFast},
		{"encrypt_fast/json", planner.SecurityEncrypt, "json", planner.GatewayCryptoFast},
		{"field_encrypt_fast/json", planner.SecurityFieldEncrypt, "json", planner.GatewayCryptoFast},
	} {
		b.Run(tc.name, func(b *testing.B) {
			mode := c.Modes()[planner.SecurityTLS]
			if tc.security != "" {
				enc := tc.encoding
				if tc.security != planner.SecurityFieldEncrypt {
					enc = ""
				}
				name := planner.GatewayModeName(tc.security, planner.SecurityTLS, enc, "")
				if tc.crypto != "" {
					name += "." + tc.crypto
				}
				g, err := StartGatewayMode(ctx, c, GatewayModeOptions{Security: tc.security, Encoding: enc, SchemaDir: schemas,
					Crypto: tc.crypto, Name: name})
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				mode = c.Modes()[name]
				if want := tc.crypto; mode.Crypto == nil || (want != "" && mode.Crypto.Requested != want) {
					b.Fatalf("%s: gateway crypto %+v, want %s", name, mode.Crypto, want)
				}
				b.Logf("%s: %s", name, *mode.Crypto)
			}
			props, err := kafkaconf.ReadClientConfig(mode.ClientConfig)
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				res, err := loadgen.Run(ctx, loadgen.Config{
					Bootstrap: mode.Bootstrap, ClientConfig: props, Mode: tc.name,
					Partitions: 6, ReplicationFactor: 1, MinInsyncReplicas: 1,
					MessageSize: 1024, Rate: 5000, Producers: 1, ConsumerGroups: 1, ConsumersPerGroup: 1,
					Acks: "all", LingerMs: 1, BatchBytes: 131072, Compression: "none", Encoding: tc.encoding,
					Warmup: time.Second, Duration: 3 * time.Second, DrainTimeout: 10 * time.Second, Seed: 1,
				})
				if err != nil {
					b.Fatal(err)
				}
				if !res.Healthy {
					b.Fatalf("%s: unhealthy: %v", tc.name, res.Reasons)
				}
				b.ReportMetric(res.PublishLatencyMs.P50, "publish_p50_ms")
				b.ReportMetric(res.PublishLatencyMs.P99, "publish_p99_ms")
				b.ReportMetric(res.E2ELatencyMs.P50, "e2e_p50_ms")
				b.ReportMetric(res.E2ELatencyMs.P99, "e2e_p99_ms")
			}
		})
	}
}
