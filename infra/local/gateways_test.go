package local

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// TestEncryptingModesEndToEnd runs the load generator through each
// encrypting gateway mode of the embedded cluster: the run is healthy,
// which includes the per-record digest check, so consumers received exactly
// what producers sent; and what rests on the broker, read directly through
// the mode's upstream, is ciphertext where it must be.
func TestEncryptingModesEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Brokers: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	schemas := t.TempDir()
	for _, name := range []string{"record.avsc", "record.pb"} {
		b, err := fs.ReadFile(loadgen.Schema, "schema/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(schemas, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ssn := regexp.MustCompile(`[0-9]{3}-[0-9]{2}-[0-9]{4}`)
	for _, tc := range []struct {
		security, transport, encoding, cipher string
	}{
		{"encrypt", "tls", "bytes", ""},
		{"encrypt", "sasl_ssl", "json", ""},
		{"field_encrypt", "tls", "json", ""},
		{"field_encrypt", "mtls", "avro", ""},
		{"field_encrypt", "tls", "protobuf", ""},
		{"field_encrypt", "sasl_ssl", "json", "fpe"},
		{"field_encrypt", "tls", "avro", "fpe"},
	} {
		name := planner.GatewayModeName(tc.security, tc.transport, tc.encoding, tc.cipher)
		t.Run(name+"/"+tc.encoding, func(t *testing.T) {
			enc := tc.encoding
			if tc.security == "encrypt" {
				enc = ""
			}
			g, err := StartGatewayMode(ctx, c, GatewayModeOptions{
				Security: tc.security, Transport: tc.transport, Encoding: enc, Cipher: tc.cipher, SchemaDir: schemas,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			m := c.Modes()[name]
			if m.Upstream == nil || strings.Join(m.Bootstrap, ",") != g.Bootstrap() {
				t.Fatalf("mode %s = %+v", name, m)
			}
			props, err := kafkaconf.ReadClientConfig(m.ClientConfig)
			if err != nil {
				t.Fatal(err)
			}
			topic := "enc-" + strings.NewReplacer(".", "-", "_", "-").Replace(name) + "-" + tc.encoding
			res, err := loadgen.Run(ctx, loadgen.Config{
				Bootstrap: m.Bootstrap, ClientConfig: props, Mode: name,
				Topic: topic, KeepTopic: true, Partitions: 2, ReplicationFactor: 1, MinInsyncReplicas: 1,
				MessageSize: 1024, Rate: 200, Producers: 1, ConsumerGroups: 1, ConsumersPerGroup: 1,
				Acks: "all", LingerMs: 1, BatchBytes: 131072, Compression: "lz4", Encoding: tc.encoding,
				Warmup: 500 * time.Millisecond, Duration: 2 * time.Second, DrainTimeout: 10 * time.Second, Seed: 7,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Healthy || res.Errors != 0 || res.Consumed == 0 {
				t.Fatalf("run through %s: healthy %v, errors %d, consumed %d, reasons %v", name, res.Healthy, res.Errors, res.Consumed, res.Reasons)
			}

			// What rests on the broker, read through the upstream mode.
			up := clientFor(t, m.Upstream.ClientConfig, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			seen := 0
			for seen < 20 {
				fs := up.PollFetches(ctx)
				if err := ctx.Err(); err != nil {
					t.Fatalf("reading upstream: %v after %d records", err, seen)
				}
				fs.EachRecord(func(r *kgo.Record) {
					seen++
					marked, marker := false, ""
					for _, h := range r.Headers {
						if h.Key == "xp.enc" {
							marked, marker = true, string(h.Value)
						}
					}
					if !marked {
						t.Errorf("record at offset %d rests without the xp.enc header", r.Offset)
					}
					switch {
					case tc.cipher == "fpe":
						// The ssn keeps its format at rest; that it differs
						// is tested where the plaintext is known
						// (TestFieldEncryptFPEInterop).
						if marker != "f1;k1:ssn" || !ssn.Match(r.Value) || tc.encoding == "json" && !json.Valid(r.Value) {
							t.Errorf("field_encrypt.fpe: offset %d rests with marker %q as %q", r.Offset, marker, r.Value)
						}
					case tc.security == "encrypt" && tc.encoding == "json" && json.Valid(r.Value):
						t.Errorf("encrypt: value at offset %d rests as plaintext JSON", r.Offset)
					case tc.security == "field_encrypt" && ssn.Match(r.Value):
						t.Errorf("field_encrypt: an ssn rests in plaintext at offset %d", r.Offset)
					case tc.security == "field_encrypt" && tc.encoding == "json" && !json.Valid(r.Value):
						t.Errorf("field_encrypt json: value at offset %d is no longer JSON", r.Offset)
					}
				})
			}
		})
	}
}

func TestRelativeDirBecomesAbsolute(t *testing.T) {
	t.Chdir(t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, Options{Dir: "rel/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !filepath.IsAbs(c.Dir()) {
		t.Fatalf("Dir() = %q, want an absolute path", c.Dir())
	}
	// An encrypting gateway resolves its vault against the directory.
	g, err := StartGatewayMode(ctx, c, GatewayModeOptions{Security: planner.SecurityEncrypt})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
}
