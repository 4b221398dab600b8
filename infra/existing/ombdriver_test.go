package existing

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/kafkaconf"
)

func readDriver(t *testing.T, name string) (string, []byte) {
	t.Helper()
	p := filepath.Join("testdata", "omb", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestImportOMBDriver turns OMB's own Kafka driver files, and secured ones
// of the same format, into endpoints.
func TestImportOMBDriver(t *testing.T) {
	t.Run("omb latency driver", func(t *testing.T) {
		p, b := readDriver(t, "kafka-latency.yaml")
		d, err := ImportOMBDriver(p, b, "plaintext")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.Bootstrap, []string{"localhost:9092"}) {
			t.Errorf("bootstrap %v", d.Bootstrap)
		}
		wantSpec := []string{"replication_factor: 3", "acks: all", "linger_ms: 1", "batch_bytes: 131072", "min_insync_replicas: 2"}
		if !slices.Equal(d.Spec, wantSpec) {
			t.Errorf("spec %q, want %q", d.Spec, wantSpec)
		}
		notes := strings.Join(d.Notes, "\n")
		for _, w := range []string{p + ":34: consumerConfig auto.offset.reset=earliest: not taken over", p + ":35: consumerConfig enable.auto.commit=false",
			p + ":36: consumerConfig max.partition.fetch.bytes"} {
			if !strings.Contains(notes, w) {
				t.Errorf("notes %q lack %q", notes, w)
			}
		}
	})
	t.Run("omb throughput driver", func(t *testing.T) {
		p, b := readDriver(t, "kafka-throughput.yaml")
		d, err := ImportOMBDriver(p, b, "plaintext")
		if err != nil {
			t.Fatal(err)
		}
		if notes := strings.Join(d.Notes, "\n"); !strings.Contains(notes, p+":28: commonConfig request.timeout.ms=1200000: not taken over") {
			t.Errorf("notes %q", notes)
		}
	})
	t.Run("a plaintext driver is no tls endpoint", func(t *testing.T) {
		p, b := readDriver(t, "kafka-latency.yaml")
		_, err := ImportOMBDriver(p, b, "tls")
		if err == nil || !strings.Contains(err.Error(), "security.protocol=PLAINTEXT, which is not mode tls") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("sasl driver", func(t *testing.T) {
		p, b := readDriver(t, "kafka-sasl.yaml")
		d, err := ImportOMBDriver(p, b, "sasl_ssl")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(d.Bootstrap, []string{"kafka-1.stg:9095", "kafka-2.stg:9095"}) {
			t.Errorf("bootstrap %v", d.Bootstrap)
		}
		if !slices.Contains(d.Spec, "compression: lz4") || !slices.Contains(d.Spec, "acks: 1") {
			t.Errorf("spec %q", d.Spec)
		}
		if notes := strings.Join(d.Notes, "\n"); !strings.Contains(notes, p+":8: topicConfig retention.ms=3600000") ||
			!strings.Contains(notes, p+":19: commonConfig request.timeout.ms") {
			t.Errorf("notes %q", notes)
		}
		// The written config reads back as the driver's clients read it.
		cf, err := kafkaconf.ParseClientFile("sasl.properties", []byte(d.Properties))
		if err != nil {
			t.Fatal(err)
		}
		props := cf.Map()
		if cf.Dialect != kafkaconf.DialectJava || props[kafkaconf.SecurityProtocol] != "SASL_SSL" || props[kafkaconf.SSLTruststorePassword] != "changeit" ||
			props[kafkaconf.SASLJAASConfig] != `org.apache.kafka.common.security.scram.ScramLoginModule required username="bench" password="s3cr\\t";` {
			t.Errorf("%s\n%q", d.Properties, props)
		}
		if _, ok := props[kafkaconf.BootstrapServers]; ok {
			t.Errorf("bootstrap.servers is in the client config; the endpoint has it")
		}
	})
	t.Run("kerberos", func(t *testing.T) {
		p, b := readDriver(t, "kafka-kerberos.yaml")
		_, err := ImportOMBDriver(p, b, "sasl_ssl")
		if err == nil || !strings.Contains(err.Error(), p+":8: commonConfig sasl.kerberos.service.name: Kerberos (GSSAPI) is not supported") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		_, err := ImportOMBDriver("d.yaml", []byte("driverClass: "+OMBKafkaDriver+"\ncommonConfg: |\n  bootstrap.servers=k:1\n"), "plaintext")
		if err == nil || !strings.Contains(err.Error(), `d.yaml:2: unknown key "commonConfg"; did you mean "commonConfig"?`) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("another driver", func(t *testing.T) {
		_, err := ImportOMBDriver("d.yaml", []byte("driverClass: io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver\ncommonConfig: |\n  bootstrap.servers=k:1\n"), "plaintext")
		if err == nil || !strings.Contains(err.Error(), "d.yaml:1: driverClass io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver: not OMB's Kafka driver") {
			t.Fatalf("%v", err)
		}
	})
}

// TestImportOMBDriverProtocolURLs: bootstrap servers written
// PROTOCOL://HOST:PORT, as Kafka's Java client takes them, become the
// endpoint's HOST:PORT when the protocol is the mode's; any other protocol
// is refused naming the line.
func TestImportOMBDriverProtocolURLs(t *testing.T) {
	driver := func(boot, proto string) []byte {
		return []byte("driverClass: " + OMBKafkaDriver + "\ncommonConfig: |\n  bootstrap.servers=" + boot +
			"\n  security.protocol=" + proto + "\n  ssl.truststore.type=PEM\n  ssl.truststore.location=/etc/ca.pem\n")
	}
	ok := []struct {
		name, mode, boot, proto string
		want                    []string
	}{
		{"ssl url", "tls", "SSL://127.0.0.1:19191", "SSL", []string{"127.0.0.1:19191"}},
		{"a list, mixed forms", "tls", "SSL://k1:9093, k2:9093,ssl://[::1]:9093", "SSL", []string{"k1:9093", "k2:9093", "[::1]:9093"}},
		{"sasl_ssl", "sasl_ssl", "SASL_SSL://k1:9095", "SASL_SSL", []string{"k1:9095"}},
		{"a gateway mode over tls", "proxy", "SSL://gw:6969", "SSL", []string{"gw:6969"}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			b := driver(tc.boot, tc.proto)
			if tc.proto == "SASL_SSL" {
				b = append(b, "  sasl.mechanism=PLAIN\n  sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"p\";\n"...)
			}
			d, err := ImportOMBDriver("d.yaml", b, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Bootstrap, tc.want) {
				t.Errorf("bootstrap %q, want %q", d.Bootstrap, tc.want)
			}
		})
	}
	bad := []struct {
		name, mode, boot, proto, want string
	}{
		{"ssl url for plaintext", "plaintext", "SSL://k1:9093", "PLAINTEXT",
			"d.yaml:3: bootstrap.servers SSL://k1:9093: protocol SSL is not mode plaintext: want PLAINTEXT://HOST:PORT (or HOST:PORT)"},
		{"plaintext url for tls", "tls", "k1:9093,PLAINTEXT://k2:9092", "SSL",
			"d.yaml:3: bootstrap.servers PLAINTEXT://k2:9092: protocol PLAINTEXT is not mode tls: want SSL://HOST:PORT"},
		{"sasl_ssl url for a gateway over tls", "proxy", "SASL_SSL://gw:6969", "SSL",
			"protocol SASL_SSL is not mode proxy (clients speak tls to the gateway): want SSL://HOST:PORT"},
		{"a listener name", "tls", "INTERNAL://k1:9093", "SSL",
			"d.yaml:3: commonConfig bootstrap.servers INTERNAL://k1:9093: INTERNAL is not a security protocol (PLAINTEXT, SSL, SASL_SSL)"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportOMBDriver("d.yaml", driver(tc.boot, tc.proto), tc.mode)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPasswordSASL(t *testing.T) {
	for _, c := range []struct {
		name, props, want string
	}{
		{"scram", "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n", ""},
		{"plain librdkafka", "security.protocol=SASL_SSL\nsasl.mechanisms=PLAIN\n", ""},
		{"gssapi", "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n", "logs in with GSSAPI, which platform: existing does not take yet"},
		{"oauthbearer", "security.protocol=SASL_SSL\nsasl.mechanisms=OAUTHBEARER\n", "logs in with OAUTHBEARER, which platform: existing does not take yet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cf, err := kafkaconf.ParseClientFile("c.properties", []byte(c.props))
			if err != nil {
				t.Fatal(err)
			}
			err = passwordSASL(cf)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("passwordSASL: %v, want %q", err, c.want)
			}
		})
	}
}
