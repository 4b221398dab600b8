package kafkaconf

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/pki"
	goldenfile "github.com/xp-bench/xp/internal/golden"
	"github.com/xp-bench/xp/planner"
)

// golden compares got with testdata/name (golden.Check; -update rewrites it).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got)
}

func addrs(prefix string, n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("%s.%d", prefix, 10+i))
	}
	return out
}

func testServer(brokers, controllers int) *Server {
	s := NewServer(addrs("10.0.1", brokers), addrs("10.0.2", controllers))
	s.LogDirs = "/var/lib/xp/kafka-data"
	s.Keystore = "/home/ubuntu/xp/c1/pki/broker-keystore.pem"
	s.Truststore = "/home/ubuntu/xp/c1/pki/ca.pem"
	s.SASLUser = "xp"
	s.SASLPassword = "test-password"
	return s
}

func TestServerPropertiesGolden(t *testing.T) {
	for _, brokers := range []int{1, 3, 5} {
		for _, controllers := range []int{0, 3} {
			name := fmt.Sprintf("%db-%dc", brokers, controllers)
			t.Run(name, func(t *testing.T) {
				s := testServer(brokers, controllers)
				wantVoters := map[int]int{1: 1, 3: 3, 5: 5}[brokers]
				if controllers > 0 {
					wantVoters = controllers
				}
				if got := len(s.Controllers()); got != wantVoters {
					t.Fatalf("%d voters, want %d", got, wantVoters)
				}
				for _, n := range s.Nodes {
					b, err := s.Properties(n.ID)
					if err != nil {
						t.Fatal(err)
					}
					golden(t, filepath.Join("server", name, fmt.Sprintf("node-%d.properties", n.ID)), b)
					checkNode(t, s, n, b)
				}
				ca, err := pki.New(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				cert, key, err := ca.Client("client")
				if err != nil {
					t.Fatal(err)
				}
				for _, mode := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
					real, err := s.ClientProps(mode, ca.CAPath(), cert, key, "")
					if err != nil {
						t.Fatal(err)
					}
					if _, err := ClientOpts(real); err != nil {
						t.Fatalf("%s client properties do not load: %v", mode, err)
					}
					props, _ := s.ClientProps(mode, "/c/ca.pem", "/c/client.pem", "/c/client-key.pem", "")
					golden(t, filepath.Join("server", name, "client-"+mode+".properties"), FormatClientConfig(props))
				}
			})
		}
	}
}

// checkNode asserts what the golden files must say, so a wrong file can
// not be blessed by -update unnoticed.
func checkNode(t *testing.T, s *Server, n Node, text []byte) {
	t.Helper()
	p, err := ParseClientConfig(text)
	if err != nil {
		t.Fatal(err)
	}
	if p["node.id"] != fmt.Sprint(n.ID) || p["process.roles"] != strings.Join(n.Roles, ",") {
		t.Errorf("node %d: node.id %s roles %s", n.ID, p["node.id"], p["process.roles"])
	}
	if p["controller.quorum.voters"] != s.QuorumVoters() || p["log.dirs"] != s.LogDirs {
		t.Errorf("node %d: voters %q log.dirs %q", n.ID, p["controller.quorum.voters"], p["log.dirs"])
	}
	for _, l := range strings.Split(p["listeners"], ",") {
		if !strings.Contains(l, "://"+n.Address+":") {
			t.Errorf("node %d: listener %s not bound to its address %s", n.ID, l, n.Address)
		}
	}
	if !n.has(planner.RoleBroker) {
		if p["advertised.listeners"] != "" || p["listeners"] != "CONTROLLER://"+n.Address+":9097" {
			t.Errorf("controller-only node %d: listeners %q advertised %q", n.ID, p["listeners"], p["advertised.listeners"])
		}
		return
	}
	want := []string{"PLAINTEXT://", "SSL://", "MTLS://", "SASL_SSL://", "INTERNAL://"}
	adv := strings.Split(p["advertised.listeners"], ",")
	if len(adv) != len(want) {
		t.Fatalf("node %d: advertised %v", n.ID, adv)
	}
	for i, w := range want {
		if !strings.HasPrefix(adv[i], w+n.Address+":") {
			t.Errorf("node %d: advertised %s, want %s on %s", n.ID, adv[i], w, n.Address)
		}
	}
	for k, v := range map[string]string{
		"listener.name.mtls.ssl.client.auth":             "required",
		"ssl.keystore.type":                              "PEM",
		"ssl.truststore.type":                            "PEM",
		"inter.broker.listener.name":                     "INTERNAL",
		"listener.name.sasl_ssl.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
	} {
		if p[k] != v {
			t.Errorf("node %d: %s=%q, want %q", n.ID, k, p[k], v)
		}
	}
}

// TestServerExtra: extra configs follow the rendered ones, sorted, on
// every node.
func TestServerExtra(t *testing.T) {
	s := testServer(3, 0)
	s.Extra = map[string]string{"controller.quorum.fetch.timeout.ms": "10000", "broker.session.timeout.ms": "30000"}
	for _, n := range s.Nodes {
		b, err := s.Properties(n.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "\n# set for this cluster\nbroker.session.timeout.ms=30000\ncontroller.quorum.fetch.timeout.ms=10000\n"
		if !strings.HasSuffix(string(b), want) {
			t.Errorf("node %d ends %q, want %q", n.ID, b[max(0, len(b)-200):], want)
		}
	}
}

// TestServerInterBrokerAndAuthorizer: inter-broker tls and mtls make the
// INTERNAL listener SSL (mtls with a client certificate required), and
// super users turn on the StandardAuthorizer, on brokers and controllers;
// the defaults render neither.
func TestServerInterBrokerAndAuthorizer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		interBroker string
		superUsers  []string
		want, not   []string
	}{
		{"defaults", "", nil, []string{"INTERNAL:PLAINTEXT"},
			[]string{"INTERNAL:SSL", "listener.name.internal.ssl.client.auth", "authorizer.class.name", "super.users"}},
		{"tls", planner.SecurityTLS, nil, []string{"INTERNAL:SSL,CONTROLLER:PLAINTEXT", "inter.broker.listener.name=INTERNAL\n"},
			[]string{"listener.name.internal.ssl.client.auth"}},
		{"mtls", planner.SecurityMTLS, nil, []string{"INTERNAL:SSL", "listener.name.internal.ssl.client.auth=required\n"}, nil},
		{"authorizer", "", []string{"User:ANONYMOUS", "User:CN=broker-1,O=xp"}, []string{
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n",
			"super.users=User:ANONYMOUS;User:CN=broker-1,O=xp\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testServer(3, 1)
			s.InterBroker, s.SuperUsers = tc.interBroker, tc.superUsers
			for _, n := range s.Nodes {
				b, err := s.Properties(n.ID)
				if err != nil {
					t.Fatal(err)
				}
				broker := n.has(planner.RoleBroker)
				for _, w := range tc.want {
					if onBroker := !strings.Contains(w, "super.users") && !strings.Contains(w, "authorizer"); onBroker && !broker {
						continue
					}
					if !strings.Contains(string(b), w) {
						t.Errorf("node %d lacks %q", n.ID, w)
					}
				}
				for _, w := range tc.not {
					if strings.Contains(string(b), w) {
						t.Errorf("node %d has %q", n.ID, w)
					}
				}
			}
		})
	}
}

func TestServerRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Server)
		want string
	}{
		{"no broker", func(s *Server) { s.Nodes = s.Nodes[len(s.Nodes)-1:] }, "no broker"},
		{"host name", func(s *Server) { s.Nodes[0].Address = "broker-0" }, "not an IP address"},
		{"duplicate id", func(s *Server) { s.Nodes[1].ID = s.Nodes[0].ID }, "used twice"},
		{"no keystore", func(s *Server) { s.Keystore = "" }, "PEM keystore"},
		{"quote in password", func(s *Server) { s.SASLPassword = `a"b` }, "quotes"},
		{"extra repeats a rendered key", func(s *Server) { s.Extra = map[string]string{"min.insync.replicas": "1"} }, "extra config min.insync.replicas is one xp renders itself"},
		{"extra with a line break", func(s *Server) { s.Extra = map[string]string{"a.b": "1\nlisteners=x"} }, "one-line value"},
		{"unknown inter-broker security", func(s *Server) { s.InterBroker = "sasl_ssl" }, `inter-broker security "sasl_ssl": want plaintext, tls or mtls`},
		{"super user without User:", func(s *Server) { s.SuperUsers = []string{"ANONYMOUS"} }, `super user "ANONYMOUS"`},
		{"super user with a semicolon", func(s *Server) { s.SuperUsers = []string{"User:a;User:b"} }, "without ';'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := testServer(3, 1)
			tc.edit(s)
			_, err := s.Properties(s.Nodes[0].ID)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

var testSHA = func() string {
	sum := sha512.Sum512([]byte("kafka_2.13-3.9.1.tgz"))
	return hex.EncodeToString(sum[:])
}()

func testInstall() Install {
	return Install{Version: "3.9.1", URL: "https://downloads.example.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz",
		SHA512: strings.ToUpper(testSHA[:64]) + " " + testSHA[64:], Dir: "/home/ubuntu/xp/c1/kafka-1",
		LogDirs: "/home/ubuntu/xp/c1/kafka-1/data", ClusterID: "MkU3OEVBNTcwNTJENDM2Qk"}
}

func TestInstallScriptGolden(t *testing.T) {
	b, err := testInstall().Script()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "install/install.sh", b)
	if !strings.Contains(string(b), testSHA+"  ") {
		t.Error("the SHA-512 is not normalised into the script")
	}
	// A release file uploaded to the host, of Kafka 4 (Log4j 2, Java 17).
	in := testInstall()
	in.Version, in.URL, in.File = "4.4.0", "", "/home/ubuntu/xp/c1/kafka-1/kafka_2.13-4.4.0.tgz"
	f, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "install/install-file.sh", f)
	for _, s := range [][]byte{b, f} {
		path := filepath.Join(t.TempDir(), "install.sh")
		os.WriteFile(path, s, 0o700)
		if out, err := exec.Command("sh", "-n", path).CombinedOutput(); err != nil {
			t.Fatalf("sh -n: %v: %s", err, out)
		}
	}
}

// TestNewClusterID: ids decode to Kafka's 16-byte Uuid and never start
// with '-' (kafka-storage.sh format -t would read one as an option; one
// random id in 64 would). Without the guard, 4096 draws would all avoid
// '-' with probability 1e-28, so this fails if the guard goes.
func TestNewClusterID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 4096; i++ {
		id := NewClusterID()
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 16 || strings.HasPrefix(id, "-") || seen[id] {
			t.Fatalf("cluster id %q: %d bytes, %v, seen before %v", id, len(b), err, seen[id])
		}
		seen[id] = true
	}
	for _, tc := range []struct {
		b    []byte
		want bool
	}{{make([]byte, 16), true}, {append(make([]byte, 15), 1), true}, {append(make([]byte, 15), 2), false}, {append([]byte{1}, make([]byte, 15)...), false}} {
		if got := reservedUUID(tc.b); got != tc.want {
			t.Errorf("reservedUUID(%x) = %v, want %v", tc.b, got, tc.want)
		}
	}
}

func TestInstallRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Install)
		want string
	}{
		{"short sha", func(i *Install) { i.SHA512 = "abc" }, "3 hex digits, want 128"},
		{"not hex", func(i *Install) { i.SHA512 = strings.Repeat("z", 128) }, "not hexadecimal"},
		{"ftp url", func(i *Install) { i.URL = "ftp://x/kafka.tgz" }, "http(s) URL"},
		{"url and file", func(i *Install) { i.File = "/x/kafka.tgz" }, "not both"},
		{"relative file", func(i *Install) { i.URL, i.File = "", "x/kafka.tgz" }, "kafka release file"},
		{"shell in jvm flags", func(i *Install) { i.JVMFlags = "-XX:+UseG1GC; id" }, "kafka JVM flags"},
		{"shell in url", func(i *Install) { i.URL = "https://x/$(id).tgz" }, "not allowed"},
		{"relative dir", func(i *Install) { i.Dir = "xp/c1" }, "absolute path"},
		{"bad version", func(i *Install) { i.Version = "latest" }, "release number"},
		{"bad cluster id", func(i *Install) { i.ClusterID = "x" }, "22 URL-safe"},
		{"cluster id taken for an option", func(i *Install) { i.ClusterID = "-kU3OEVBNTcwNTJENDM2Qk" }, "the first not '-'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInstall()
			tc.edit(&in)
			_, err := in.Script()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestInstallRefusesWrongChecksum runs the script against a tarball served
// on loopback whose SHA-512 is not the one given: it stops before
// unpacking, says why, and leaves nothing behind.
func TestInstallRefusesWrongChecksum(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("not the release"))
	})}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	dir := t.TempDir()
	in := testInstall()
	in.URL = "http://" + ln.Addr().String() + "/kafka_2.13-3.9.1.tgz"
	in.Dir, in.LogDirs = dir, filepath.Join(dir, "data")
	b, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", string(b)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "does not match the sha512") {
		t.Fatalf("script accepted a tarball with the wrong checksum: %v\n%s", err, out)
	}
	for _, left := range []string{"kafka", "kafka.tgz.part", "kafka.part"} {
		if _, err := os.Stat(filepath.Join(dir, left)); err == nil {
			t.Errorf("%s left behind", left)
		}
	}
}
