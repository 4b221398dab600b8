package remote

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// renderDeployment is a deployment on hosts that are never dialled: enough
// to render what StartKafka would upload.
func renderDeployment(brokers, controllers, clients int) *Deployment {
	d := &Deployment{hosts: map[string]*deployed{}}
	add := func(role string, n int, net string) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("%s-%d", role, i)
			d.hosts[name] = &deployed{Host: Host{Name: name, Role: role, Private: fmt.Sprintf("%s.%d", net, 10+i)},
				dir: "/home/u/xp/c1/" + name, xp: "/home/u/xp/c1/" + name + "/bin/xp"}
		}
	}
	add(planner.RoleBroker, brokers, "10.0.1")
	add(planner.RoleController, controllers, "10.0.2")
	add(planner.RoleClient, clients, "10.0.3")
	return d
}

// TestPlanKafka checks every file StartKafka uploads, for combined and
// dedicated controllers: server.properties per node with that host's
// paths and address, a key store only on brokers whose certificate the
// cluster's CA signed for the broker's private address, one random SASL
// password shared by the PLAIN JAAS config and the client configs, and a
// client config per mode bootstrapping from every broker.
func TestPlanKafka(t *testing.T) {
	for _, tc := range []struct {
		brokers, controllers int
		wantRoles            map[string]string
	}{
		{3, 0, map[string]string{"broker-0": "broker,controller", "broker-1": "broker,controller", "broker-2": "broker,controller"}},
		{2, 3, map[string]string{"broker-0": "broker", "broker-1": "broker", "controller-0": "controller", "controller-1": "controller", "controller-2": "controller"}},
	} {
		t.Run(fmt.Sprintf("%db-%dc", tc.brokers, tc.controllers), func(t *testing.T) {
			d := renderDeployment(tc.brokers, tc.controllers, 2)
			p, err := d.planKafka("/home/u/xp/c1/kafka-client", KafkaSecurity{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(p.caDir) })
			// Nothing that goes to a host holds the CA's key, which stays
			// in caDir on this machine.
			caKey, err := os.ReadFile(filepath.Join(p.caDir, pki.CAKeyFile))
			if err != nil {
				t.Fatal(err)
			}
			// The key's second PEM line: its private scalar, not the
			// header every P-256 key shares.
			keyB64 := strings.Split(string(caKey), "\n")[2]
			uploads := map[string][]byte{}
			for f, b := range p.clientFiles {
				uploads[f] = b
			}
			for _, n := range p.nodes {
				uploads[n.h.Name+" server.properties"], uploads[n.h.Name+" keystore"] = n.props, n.keystore
			}
			for f, b := range uploads {
				if bytes.Contains(b, caKey) || bytes.Contains(b, []byte(keyB64)) {
					t.Errorf("%s holds the CA's key", f)
				}
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(p.ca) {
				t.Fatal("the CA is not PEM")
			}
			if len(p.nodes) != len(tc.wantRoles) {
				t.Fatalf("%d nodes, want %d", len(p.nodes), len(tc.wantRoles))
			}
			var password string
			for _, n := range p.nodes {
				h := n.h
				props, err := kafkaconf.ParseClientConfig(n.props)
				if err != nil {
					t.Fatal(err)
				}
				if props["process.roles"] != tc.wantRoles[h.Name] {
					t.Errorf("%s: roles %q, want %q", h.Name, props["process.roles"], tc.wantRoles[h.Name])
				}
				if props["log.dirs"] != path.Join(h.dir, "data") {
					t.Errorf("%s: log.dirs %q", h.Name, props["log.dirs"])
				}
				if !strings.Contains(props["listeners"], h.Private+":") {
					t.Errorf("%s: listeners %q not on %s", h.Name, props["listeners"], h.Private)
				}
				if h.Role != planner.RoleBroker {
					if n.keystore != nil || props["ssl.keystore.location"] != "" {
						t.Errorf("%s: a dedicated controller gets TLS material", h.Name)
					}
					continue
				}
				if props["ssl.keystore.location"] != path.Join(h.dir, "kafka-pki/keystore.pem") || props["ssl.truststore.location"] != path.Join(h.dir, "kafka-pki/ca.pem") {
					t.Errorf("%s: key store %q trust store %q", h.Name, props["ssl.keystore.location"], props["ssl.truststore.location"])
				}
				checkKeystore(t, h, n.keystore, roots)
				m := regexp.MustCompile(`user_xp="([0-9a-f]+)"`).FindStringSubmatch(props["listener.name.sasl_ssl.plain.sasl.jaas.config"])
				if m == nil || len(m[1]) != 32 || (password != "" && m[1] != password) {
					t.Errorf("%s: PLAIN JAAS config %q", h.Name, props["listener.name.sasl_ssl.plain.sasl.jaas.config"])
				} else {
					password = m[1]
				}
			}
			wantFiles := []string{"ca.pem", "client-key.pem", "client.pem", "mtls.properties", "plaintext.properties",
				"sasl_ssl-plain.properties", "sasl_ssl.properties", "tls.properties"}
			var got []string
			for _, f := range sortedKeys(p.clientFiles) {
				got = append(got, strings.TrimPrefix(f, "/home/u/xp/c1/kafka-client/"))
			}
			if strings.Join(got, " ") != strings.Join(wantFiles, " ") {
				t.Errorf("client files %v, want %v", got, wantFiles)
			}
			var boot []string
			for i := 0; i < tc.brokers; i++ {
				boot = append(boot, fmt.Sprintf("10.0.1.%d:9095", 10+i))
			}
			for f, mech := range map[string]string{"sasl_ssl.properties": "SCRAM-SHA-512", "sasl_ssl-plain.properties": "PLAIN"} {
				props, _ := kafkaconf.ParseClientConfig(p.clientFiles["/home/u/xp/c1/kafka-client/"+f])
				if props[kafkaconf.SASLPassword] != password || props[kafkaconf.SASLMechanism] != mech || props[kafkaconf.BootstrapServers] != strings.Join(boot, ",") {
					t.Errorf("%s: %v", f, props)
				}
			}
			if p.modes["tls"].ClientConfig != "/home/u/xp/c1/kafka-client/tls.properties" || !strings.HasSuffix(strings.Join(p.modes["tls"].Bootstrap, ","), ":9093") {
				t.Errorf("tls mode %+v", p.modes["tls"])
			}
			wantIDs := []string{"1", "2", "3"}[:tc.brokers]
			if p.brokerIDs != strings.Join(wantIDs, ",") || len(p.readyModes) != 5 || p.scramAdmin != "/home/u/xp/c1/kafka-client/tls.properties" {
				t.Errorf("readiness: brokers %q modes %v scram admin %q", p.brokerIDs, p.readyModes, p.scramAdmin)
			}
		})
	}
	// Two plans, two passwords and cluster ids.
	d := renderDeployment(1, 0, 1)
	p1, _ := d.planKafka("/c", KafkaSecurity{})
	p2, _ := d.planKafka("/c", KafkaSecurity{})
	defer os.RemoveAll(p1.caDir)
	defer os.RemoveAll(p2.caDir)
	if p1.clusterID == p2.clusterID || string(p1.clientFiles["/c/sasl_ssl.properties"]) == string(p2.clientFiles["/c/sasl_ssl.properties"]) {
		t.Error("two deployments share a cluster id or a password")
	}
}

// checkKeystore asserts the broker's PEM key store holds a key, a
// certificate for the host's private address signed by the CA, and the CA.
func checkKeystore(t *testing.T, h *deployed, ks []byte, roots *x509.CertPool) {
	t.Helper()
	var types []string
	var leaf *x509.Certificate
	for rest := ks; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		types = append(types, b.Type)
		if b.Type == "CERTIFICATE" && leaf == nil {
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			leaf = c
		}
	}
	if len(types) != 3 || !strings.Contains(types[0], "PRIVATE KEY") || leaf == nil {
		t.Fatalf("%s: key store holds %v", h.Name, types)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h.Private, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("%s: certificate: %v", h.Name, err)
	}
	named := false
	for _, ip := range leaf.IPAddresses {
		named = named || ip.Equal(net.ParseIP(h.Private))
	}
	if !named {
		t.Errorf("%s: certificate for %v, not for %s", h.Name, leaf.IPAddresses, h.Private)
	}
}

func TestPlanKafkaRefuses(t *testing.T) {
	d := renderDeployment(0, 0, 1)
	if _, err := d.planKafka("/c", KafkaSecurity{}); err == nil || !strings.Contains(err.Error(), "no broker host") {
		t.Errorf("no broker: %v", err)
	}
	d = renderDeployment(1, 0, 0)
	d.hosts["broker-0"].Private = "broker0.internal"
	if _, err := d.planKafka("/c", KafkaSecurity{}); err == nil || !strings.Contains(err.Error(), `host broker-0: private address "broker0.internal" is not an IP address`) {
		t.Errorf("a host name as private address: %v", err)
	}
}

func TestCheckKafka(t *testing.T) {
	sum := strings.Repeat("ab", 64)
	url := "https://downloads.apache.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz"
	for _, tc := range []struct {
		name string
		k    targetfile.Kafka
		want string
	}{
		{"embedded", targetfile.Kafka{Distribution: "embedded"}, ""},
		{"release", targetfile.Kafka{Version: "3.9.1", Distribution: url, SHA512: sum}, ""},
		{"no section", targetfile.Kafka{}, "kafka.distribution is missing"},
		{"url without sha512", targetfile.Kafka{Version: "3.9.1", Distribution: url}, "a release needs kafka.sha512"},
		{"url without version", targetfile.Kafka{Distribution: url, SHA512: sum}, "a release needs kafka.version"},
		{"kafka 4", targetfile.Kafka{Version: "4.1.0", Distribution: url, SHA512: sum}, ""},
		{"before SCRAM in KRaft", targetfile.Kafka{Version: "3.4.1", Distribution: url, SHA512: sum}, "needs Kafka 3.5 or later"},
		{"not a url", targetfile.Kafka{Version: "3.9.1", Distribution: "kafka.tgz", SHA512: sum}, "want an http(s) URL or the absolute path of a release file"},
		{"a file", targetfile.Kafka{Version: "4.4.0", Distribution: "/opt/dist/kafka_2.13-4.4.0.tgz", SHA512: sum}, ""},
		{"releases", targetfile.Kafka{Releases: []targetfile.KafkaRelease{{Version: "3.9.1", Distribution: url, SHA512: sum}, {Version: "4.1.0", Distribution: url, SHA512: sum}}}, ""},
		{"one release too old", targetfile.Kafka{Releases: []targetfile.KafkaRelease{{Version: "3.9.1", Distribution: url, SHA512: sum}, {Version: "3.3.2", Distribution: url, SHA512: sum}}}, "kafka.version 3.3.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkKafka(tc.k)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestKafkaRelease: a group gets the release of its rows' kafka_version,
// never another one.
func TestKafkaRelease(t *testing.T) {
	sum := strings.Repeat("ab", 64)
	two := targetfile.Kafka{Line: 4, Releases: []targetfile.KafkaRelease{
		{Version: "3.9.1", Distribution: "https://example.org/3.9.1.tgz", SHA512: sum},
		{Version: "4.1.0", Distribution: "https://example.org/4.1.0.tgz", SHA512: strings.Repeat("cd", 64)}}}
	for _, tc := range []struct {
		name    string
		k       targetfile.Kafka
		version string
		want    KafkaRelease
		err     string
	}{
		{"first", two, "3.9.1", KafkaRelease{Version: "3.9.1", URL: "https://example.org/3.9.1.tgz", SHA512: sum}, ""},
		{"second", two, "4.1.0", KafkaRelease{Version: "4.1.0", URL: "https://example.org/4.1.0.tgz", SHA512: strings.Repeat("cd", 64)}, ""},
		{"unlisted", two, "3.8.1", KafkaRelease{}, "T.yaml:4: kafka: rows ask for kafka_version 3.8.1 but the file has a release of 3.9.1, 4.1.0 only"},
		{"built by hand", targetfile.Kafka{Version: "3.9.1", Distribution: "https://example.org/k.tgz", SHA512: sum}, "3.9.1", KafkaRelease{Version: "3.9.1", URL: "https://example.org/k.tgz", SHA512: sum}, ""},
		{"built by hand, other version", targetfile.Kafka{Version: "3.9.1", Distribution: "https://example.org/k.tgz", SHA512: sum}, "4.1.0", KafkaRelease{}, "kafka_version 4.1.0"},
		{"no version", two, "", KafkaRelease{}, "names no kafka_version"},
		{"a file, heap and flags", targetfile.Kafka{Heap: "384m", JVMFlags: "-XX:+UseZGC", Releases: []targetfile.KafkaRelease{{Version: "4.4.0", Distribution: "/opt/dist/k.tgz", SHA512: sum}}}, "4.4.0",
			KafkaRelease{Version: "4.4.0", File: "/opt/dist/k.tgz", SHA512: sum, Heap: "384m", JVMFlags: "-XX:+UseZGC"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kafkaRelease(tc.k, "T.yaml", tc.version)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestHeapOpts(t *testing.T) {
	for mem, want := range map[int64]string{1024: "-Xmx512m -Xms512m", 8192: "-Xmx2048m -Xms2048m", 65536: "-Xmx6144m -Xms6144m"} {
		if got := heapOpts(mem); got != want {
			t.Errorf("heapOpts(%d) = %q, want %q", mem, got, want)
		}
	}
}
