package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// serveRelease serves the file at file as /kafka.tgz on addr (the test's
// side of the bridge) and counts the downloads.
func serveRelease(t *testing.T, addr, file string) (url string, hits func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/kafka.tgz" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		n++
		mu.Unlock()
		http.ServeFile(w, r, file)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/kafka.tgz", func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// javaCmdlines returns the command lines of the java processes in h's
// namespace.
func javaCmdlines(t *testing.T, h *netnstest.Host) [][]string {
	t.Helper()
	pids, err := h.Pids()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, p := range pids {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
		if strings.TrimSpace(string(comm)) != "java" {
			continue
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err == nil {
			out = append(out, strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"))
		}
	}
	return out
}

// TestStartKafkaOnHosts runs Apache Kafka, the releases make kafka-dist
// assembled, on two namespace hosts (a broker and a client): the Kafka 4
// release as a file uploaded to the broker host, the Kafka 3.9 one as a
// URL served over HTTP from the test's side of the bridge. A file whose
// checksum is not the target's is refused on the host, nothing left; a
// heap bigger than the host is refused before anything starts. With the
// right release every file lands 0600, storage is formatted once, the
// broker runs under the agent as `java -cp DIR/kafka-VERSION/libs/*
// kafka.Kafka` with the heap and JVM flags given, the SCRAM user is
// created and every mode is ready from the client host (`xp agent
// kafka-ready` against Kafka itself); the host record names `apache
// VERSION`, the Java runtime and the JVM flags; Kafka's server.log is
// fetched with the service logs; the agent stops it; a second version
// runs from a directory of its own.
func TestStartKafkaOnHosts(t *testing.T) {
	bin := buildXP(t)
	rel4, rel3 := disttest.Kafka(t, 4), disttest.Kafka(t, 3)
	n := netnstest.New(t, 2)
	url3, hits := serveRelease(t, n.Gateway, rel3.Path)
	wrong := strings.Repeat("ab", 64)

	log := &syncBuf{}
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey,
		KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	hosts := []Host{
		{Name: "broker-0", Role: planner.RoleBroker, SSH: n.Hosts[0].SSHAddr(), Private: n.Hosts[0].Addr},
		{Name: "client-0", Role: planner.RoleClient, SSH: n.Hosts[1].SSHAddr(), Private: n.Hosts[1].Addr},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "k1", Hosts: hosts, Pool: pool, Binary: bin, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	defer d.Teardown(context.Background())
	b := d.hosts["broker-0"]
	sh := func(h *deployed, cmd string) string {
		t.Helper()
		out, err := h.c.Output(ctx, cmd)
		if err != nil {
			t.Fatalf("%s: %s: %v", h.Name, cmd, err)
		}
		return string(out)
	}
	exists := func(p string) bool {
		return strings.TrimSpace(sh(b, "if [ -e "+ssh.Quote(p)+" ]; then echo yes; fi")) == "yes"
	}
	home4 := path.Join(b.dir, "kafka-"+rel4.Version)

	// A heap the host cannot hold: refused before anything is uploaded.
	_, err = d.StartKafka(ctx, KafkaRelease{Version: rel4.Version, File: rel4.Path, SHA512: rel4.SHA512, Heap: "4096g"}, KafkaSecurity{})
	if err == nil || !strings.Contains(err.Error(), "kafka.heap 4096g does not fit host broker-0") || exists(path.Join(b.dir, "server.properties")) {
		t.Fatalf("a heap bigger than the host: %v", err)
	}

	// A release file whose SHA-512 is not the target's: uploaded, refused
	// on the host, removed; nothing unpacked, nothing started.
	_, err = d.StartKafka(ctx, KafkaRelease{Version: rel4.Version, File: rel4.Path, SHA512: wrong, Heap: "384m"}, KafkaSecurity{})
	if err == nil || !strings.Contains(err.Error(), "does not match the sha512 of the target file") || !strings.Contains(err.Error(), "broker-0") {
		t.Fatalf("a release with the wrong checksum: %v", err)
	}
	for _, left := range []string{"kafka-" + rel4.Version, "kafka-" + rel4.Version + ".part", "kafka_2.13-" + rel4.Version + ".tgz", "data/meta.properties"} {
		if exists(path.Join(b.dir, left)) {
			t.Errorf("%s left on the host after a checksum mismatch", left)
		}
	}
	if js := javaCmdlines(t, n.Hosts[0]); len(js) > 0 {
		t.Errorf("java runs on the broker host after a refused release: %q", js)
	}

	// The right file: uploaded, installed, formatted, started, ready from
	// the client host with the SCRAM user made.
	const jvm = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"
	start := time.Now()
	modes, err := d.StartKafka(ctx, KafkaRelease{Version: rel4.Version, File: rel4.Path, SHA512: rel4.SHA512, Heap: "384m", JVMFlags: jvm, ReadyTimeout: 90 * time.Second}, KafkaSecurity{})
	if err != nil {
		t.Fatalf("%v\nserver logs:\n%s", err, serverLogs(d))
	}
	t.Logf("Kafka %s from a file: installed, started and ready in %.1fs", rel4.Version, time.Since(start).Seconds())
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
		if !strings.HasPrefix(strings.Join(modes[m].Bootstrap, ","), b.Private+":") {
			t.Errorf("mode %s: %+v", m, modes[m])
		}
	}
	// The CA's key never leaves this machine: hosts get certificates and
	// their own keys.
	for _, h := range []*deployed{b, d.hosts["client-0"]} {
		if keys := strings.TrimSpace(sh(h, "find "+ssh.Quote(path.Dir(h.dir))+" -name ca-key.pem")); keys != "" {
			t.Errorf("%s holds the CA's key: %s", h.Name, keys)
		}
	}
	if d.ca == nil {
		t.Error("no authority on this machine for the gateway hosts' certificates")
	}
	// The SCRAM user is created over the TLS listener.
	if !strings.Contains(log.String(), "--scram-admin "+path.Join(path.Dir(d.hosts["client-0"].dir), kafkaClients, "tls.properties")) {
		t.Errorf("the SCRAM user is not created over the TLS listener:\n%s", log.String())
	}
	for _, f := range []string{"server.properties", "install-kafka.sh", "kafka-pki/keystore.pem", "kafka-pki/ca.pem"} {
		if mode := strings.TrimSpace(sh(b, "stat -c %a "+ssh.Quote(path.Join(b.dir, f)))); mode != "600" {
			t.Errorf("%s is mode %s, want 600", f, mode)
		}
	}
	if exists(path.Join(b.dir, "kafka_2.13-"+rel4.Version+".tgz")) {
		t.Error("the uploaded release is kept beside the unpacked one")
	}
	props := sh(b, "cat "+ssh.Quote(path.Join(b.dir, "server.properties")))
	for _, want := range []string{"node.id=1\n", "process.roles=broker,controller\n", "PLAINTEXT://" + b.Private + ":9092",
		"log.dirs=" + path.Join(b.dir, "data") + "\n", "ssl.keystore.location=" + path.Join(b.dir, "kafka-pki/keystore.pem")} {
		if !strings.Contains(props, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, props)
		}
	}
	c := d.hosts["client-0"]
	clientDir := path.Join(path.Dir(c.dir), kafkaClients)
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl", "sasl_ssl-plain"} {
		text := sh(c, "cat "+ssh.Quote(path.Join(clientDir, m+".properties")))
		p, err := kafkaconf.ParseClientConfig([]byte(text))
		if err != nil || !strings.HasPrefix(p[kafkaconf.BootstrapServers], b.Private+":") {
			t.Errorf("client config %s on client-0: %v\n%s", m, err, text)
		}
		if pw := p[kafkaconf.SASLPassword]; pw != "" && (len(pw) < 32 || strings.Contains(log.String(), pw)) {
			t.Errorf("the SASL password %q is short or in the campaign log", pw)
		}
	}
	meta := sh(b, "cat "+ssh.Quote(path.Join(b.dir, "data", "meta.properties")))
	if !strings.Contains(meta, "node.id=1") {
		t.Errorf("meta.properties:\n%s", meta)
	}
	// The JVM is the agent's service, started from libs/ with the flags
	// given, not through a bin/ script.
	var svc agent.Service
	if err := json.Unmarshal([]byte(sh(b, ssh.Quote(b.xp)+" agent status --dir "+ssh.Quote(b.dir))), &svc); err != nil || svc.Name != "kafka" || !svc.Running {
		t.Errorf("agent status: %+v, %v; want kafka running", svc, err)
	}
	js := javaCmdlines(t, n.Hosts[0])
	if len(js) != 1 {
		t.Fatalf("java processes on the broker host: %q, want the broker", js)
	}
	cmdline := strings.Join(js[0], " ")
	for _, want := range []string{"-Xmx384m -Xms384m " + jvm + " -Dlog4j2.configurationFile=" + path.Join(b.dir, "log4j2.properties"),
		"-cp " + home4 + "/libs/* kafka.Kafka " + path.Join(b.dir, "server.properties")} {
		if !strings.Contains(cmdline, want) {
			t.Errorf("the broker's command line lacks %q:\n%s", want, cmdline)
		}
	}
	if svc.PID != 0 && !strings.Contains(sh(b, "cat /proc/"+strconv.Itoa(svc.PID)+"/comm"), "java") {
		t.Errorf("the agent's pid %d is not the JVM", svc.PID)
	}
	r := d.Hosts()[0]
	if r.Name != "broker-0" || r.Kafka != "apache "+rel4.Version || r.JVMFlags != "-Xmx384m -Xms384m "+jvm || !strings.Contains(r.Java, "version \"") {
		t.Errorf("host record %+v, want broker-0 running apache %s with its Java and JVM flags", r, rel4.Version)
	}
	logs := d.Logs(ctx, 1<<20)
	for name, want := range map[string]string{"broker-0/kafka.log": "xp agent: kafka starting", "broker-0/server.log": "Kafka Server started"} {
		zr, err := gzip.NewReader(bytes.NewReader(logs[name]))
		if err != nil {
			t.Errorf("%s: %v (have %d logs)", name, err, len(logs))
			continue
		}
		text, _ := io.ReadAll(zr)
		if !strings.Contains(string(text), want) {
			t.Errorf("%s lacks %q:\n%s", name, want, text)
		}
	}

	// The script again: nothing formatted again.
	sh(b, "sh "+ssh.Quote(path.Join(b.dir, "install-kafka.sh")))
	if again := sh(b, "cat "+ssh.Quote(path.Join(b.dir, "data", "meta.properties"))); again != meta {
		t.Errorf("formatted again:\n%s", again)
	}

	// The agent stops it, as teardown and xp infra down do.
	sh(b, ssh.Quote(b.xp)+" agent stop --dir "+ssh.Quote(b.dir)+" --grace 20s kafka")
	if js := javaCmdlines(t, n.Hosts[0]); len(js) > 0 {
		t.Errorf("java still runs after agent stop: %q", js)
	}

	// A group of another kafka_version, from a URL: its release in a
	// directory of its own, downloaded and started from there (reload4j,
	// Kafka's default heap of the host's size), recorded as what ran.
	up := strings.Count(log.String(), "uploaded in")
	if _, err := d.StartKafka(ctx, KafkaRelease{Version: rel3.Version, URL: url3, SHA512: rel3.SHA512, Heap: "384m", ReadyTimeout: 90 * time.Second}, KafkaSecurity{}); err != nil {
		t.Fatalf("Kafka %s from a URL: %v\nserver logs:\n%s", rel3.Version, err, serverLogs(d))
	}
	js = javaCmdlines(t, n.Hosts[0])
	if len(js) != 1 || !strings.Contains(strings.Join(js[0], " "), "-Dlog4j.configuration=file:"+path.Join(b.dir, "log4j.properties")+" -Dkafka.logs.dir="+path.Join(b.dir, "logs")+" -cp "+path.Join(b.dir, "kafka-"+rel3.Version)+"/libs/* kafka.Kafka") {
		t.Errorf("java processes after the second version: %q", js)
	}
	if hits() != 1 || !exists(home4) || strings.Count(log.String(), "uploaded in") != up {
		t.Errorf("second version: %d downloads (want 1), %s kept %v, files uploaded again %v", hits(), home4, exists(home4), strings.Count(log.String(), "uploaded in") != up)
	}
	if r := d.Hosts()[0]; r.Kafka != "apache "+rel3.Version || !strings.HasPrefix(r.JVMFlags, "-Xmx384m -Xms384m "+kafkaconf.DefaultJVMFlags) {
		t.Errorf("host record %+v, want apache %s with Kafka's own JVM flags", r, rel3.Version)
	}
	sh(b, ssh.Quote(b.xp)+" agent stop --dir "+ssh.Quote(b.dir)+" --grace 20s kafka")
}

// serverLogs is the end of every Kafka server.log of d, for a test that
// failed to say why.
func serverLogs(d *Deployment) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tails, _ := d.logTails(ctx, 8<<10)
	var b strings.Builder
	for _, name := range sortedKeys(tails) {
		if strings.HasSuffix(name, "/server.log") || strings.HasSuffix(name, "/kafka.log") {
			b.WriteString("== " + name + "\n")
			b.Write(tails[name])
		}
	}
	return b.String()
}
