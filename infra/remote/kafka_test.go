package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/netnstest"
)

// Stand-ins for the two scripts of a Kafka release the install script and
// the agent run. They are not Kafka: they record how they were called, the
// storage one writes meta.properties as `kafka-storage.sh format` does, and
// the server one stays up (as a process named kafka-standin) until it is
// stopped. The deployment's readiness check therefore never passes.
const (
	standinStorage = `#!/bin/sh
here=$(cd "$(dirname "$0")/.." && pwd)
echo "$*" >>"$here/../storage.calls"
cfg= id=
while [ $# -gt 0 ]; do
	case "$1" in -c) cfg=$2; shift ;; -t) id=$2; shift ;; esac
	shift
done
logdirs=$(sed -n 's/^log.dirs=//p' "$cfg")
mkdir -p "$logdirs"
echo "cluster.id=$id" >"$logdirs/meta.properties"
`
	standinStart = `#!/bin/sh
here=$(cd "$(dirname "$0")/.." && pwd)
echo "release=$(basename "$here") args=$* LOG_DIR=$LOG_DIR KAFKA_HEAP_OPTS=$KAFKA_HEAP_OPTS" >>"$here/../start.calls"
echo "stand-in, not Kafka" >"$LOG_DIR/server.log"
exec "$here/bin/kafka-standin" 300
`
)

// standinRelease is a gzipped tarball laid out like kafka_2.13-VERSION.tgz
// with the stand-in scripts.
func standinRelease(t *testing.T) []byte {
	t.Helper()
	sleep, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct {
		name string
		body []byte
	}{
		{"bin/kafka-storage.sh", []byte(standinStorage)},
		{"bin/kafka-server-start.sh", []byte(standinStart)},
		{"bin/kafka-standin", sleep},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: "kafka_2.13-9.9.9/" + f.name, Mode: 0o755, Size: int64(len(f.body)), ModTime: time.Now()}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.body)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// serveRelease serves body at /kafka.tgz on addr (the test's side of the
// bridge) and counts the downloads.
func serveRelease(t *testing.T, addr string, body []byte) (url string, hits func() int) {
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
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/kafka.tgz", func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestStartKafkaOnHosts runs the Apache Kafka path of a deployment on two
// namespace hosts (a broker and a client) against a stand-in release served
// over HTTP from the test's side of the bridge: a tarball whose checksum
// does not match is refused with the install script's message and nothing
// unpacked; with the right one, every file lands 0600, storage is formatted
// once (also when the script runs again), the server starts under the agent
// (status shows it, stop stops it) with LOG_DIR and KAFKA_HEAP_OPTS, and
// the readiness check run on the client host fails within its timeout
// naming what it waited for, since a stand-in is not Kafka.
func TestStartKafkaOnHosts(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 2)
	release := standinRelease(t)
	url, hits := serveRelease(t, n.Gateway, release)
	sum := sha512.Sum512(release)
	good := hex.EncodeToString(sum[:])
	wrong := sha512.Sum512([]byte("another release"))

	log := &syncBuf{}
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey,
		KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	hosts := []Host{
		{Name: "broker-0", Role: RoleBroker, SSH: n.Hosts[0].SSHAddr(), Private: n.Hosts[0].Addr},
		{Name: "client-0", Role: RoleClient, SSH: n.Hosts[1].SSHAddr(), Private: n.Hosts[1].Addr},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

	// A release whose SHA-512 is not the target's: refused, nothing
	// unpacked, nothing started.
	_, err = d.StartKafka(ctx, KafkaRelease{Version: "9.9.9", URL: url, SHA512: hex.EncodeToString(wrong[:])})
	if err == nil || !strings.Contains(err.Error(), "does not match the sha512 of the target file") || !strings.Contains(err.Error(), "broker-0") {
		t.Fatalf("a release with the wrong checksum: %v", err)
	}
	for _, left := range []string{"kafka-9.9.9", "kafka-9.9.9.part", "kafka.tgz.part", "storage.calls", "start.calls"} {
		if exists(path.Join(b.dir, left)) {
			t.Errorf("%s left on the host after a checksum mismatch", left)
		}
	}

	// The right release: installed, formatted, started; readiness from the
	// client host fails within its timeout, naming what is missing.
	start := time.Now()
	_, err = d.StartKafka(ctx, KafkaRelease{Version: "9.9.9", URL: url, SHA512: strings.ToUpper(good), ReadyTimeout: 4 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "kafka from client-0") || !strings.Contains(err.Error(), "SCRAM-SHA-512 user xp not created") {
		t.Fatalf("readiness against a stand-in: %v\nlog:\n%s", err, log.String())
	}
	t.Logf("readiness against the stand-in, as expected: %v", err)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("StartKafka took %v with a readiness timeout of 4s", took)
	}
	for _, f := range []string{"server.properties", "install-kafka.sh", "kafka-pki/keystore.pem", "kafka-pki/ca.pem", "cluster/pki/ca-key.pem"} {
		if mode := strings.TrimSpace(sh(b, "stat -c %a "+ssh.Quote(path.Join(b.dir, f)))); mode != "600" {
			t.Errorf("%s is mode %s, want 600", f, mode)
		}
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
	calls := sh(b, "cat "+ssh.Quote(path.Join(b.dir, "storage.calls")))
	if strings.Count(calls, "\n") != 1 || !strings.HasPrefix(calls, "format --ignore-formatted -t ") ||
		!strings.Contains(calls, "-c "+path.Join(b.dir, "server.properties")) {
		t.Errorf("kafka-storage.sh calls:\n%s", calls)
	}
	startCalls := sh(b, "cat "+ssh.Quote(path.Join(b.dir, "start.calls")))
	want := "release=kafka-9.9.9 args=" + path.Join(b.dir, "server.properties") + " LOG_DIR=" + path.Join(b.dir, "logs") + " KAFKA_HEAP_OPTS=" + heapOpts(b.info.MemoryMiB) + "\n"
	if startCalls != want {
		t.Errorf("kafka-server-start.sh calls:\n%s\nwant\n%s", startCalls, want)
	}
	var svc agent.Service
	if err := json.Unmarshal([]byte(sh(b, ssh.Quote(b.xp)+" agent status --dir "+ssh.Quote(b.dir))), &svc); err != nil || svc.Name != "kafka" || !svc.Running {
		t.Errorf("agent status: %+v, %v; want kafka running", svc, err)
	}
	if procs, _ := n.Hosts[0].Processes(); !contains(procs, "kafka-standin") {
		t.Errorf("no kafka-standin process on the broker host: %v", procs)
	}
	if r := d.Hosts()[0]; r.Name != "broker-0" || r.Kafka != "Apache Kafka 9.9.9" {
		t.Errorf("host record %+v, want broker-0 running Apache Kafka 9.9.9", r)
	}
	logs := d.Logs(ctx, 1<<20)
	for name, want := range map[string]string{"broker-0/kafka.log": "xp agent: kafka starting", "broker-0/server.log": "stand-in, not Kafka"} {
		zr, err := gzip.NewReader(bytes.NewReader(logs[name]))
		if err != nil {
			t.Errorf("%s: %v (have %d logs)", name, err, len(logs))
			continue
		}
		text, _ := io.ReadAll(zr)
		if !strings.Contains(string(text), want) {
			t.Errorf("%s:\n%s", name, text)
		}
	}

	// The script again: nothing downloaded, nothing formatted again.
	sh(b, "sh "+ssh.Quote(path.Join(b.dir, "install-kafka.sh")))
	if got := strings.Count(sh(b, "cat "+ssh.Quote(path.Join(b.dir, "storage.calls"))), "\n"); got != 1 || hits() != 2 {
		t.Errorf("after a second run: %d formats (want 1), %d downloads (want 2: the refused one and the good one)", got, hits())
	}

	// The agent stops it, as teardown and xp infra down do.
	sh(b, ssh.Quote(b.xp)+" agent stop --dir "+ssh.Quote(b.dir)+" --grace 5s kafka")
	if err := json.Unmarshal([]byte(sh(b, ssh.Quote(b.xp)+" agent status --dir "+ssh.Quote(b.dir))), &svc); err == nil {
		t.Errorf("agent status after stop: %+v", svc)
	}
	if procs, _ := n.Hosts[0].Processes(); contains(procs, "kafka-standin") {
		t.Errorf("kafka-standin still runs after agent stop: %v", procs)
	}

	// A group of another kafka_version: its release in a directory of its
	// own, downloaded and started from there, recorded as what ran.
	_, err = d.StartKafka(ctx, KafkaRelease{Version: "9.9.8", URL: url, SHA512: good, ReadyTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "SCRAM-SHA-512 user xp not created") {
		t.Fatalf("a second version against a stand-in: %v\nlog:\n%s", err, log.String())
	}
	startCalls = sh(b, "cat "+ssh.Quote(path.Join(b.dir, "start.calls")))
	if !strings.HasSuffix(startCalls, "\nrelease=kafka-9.9.8 args="+path.Join(b.dir, "server.properties")+" LOG_DIR="+path.Join(b.dir, "logs")+" KAFKA_HEAP_OPTS="+heapOpts(b.info.MemoryMiB)+"\n") ||
		hits() != 3 || !exists(path.Join(b.dir, "kafka-9.9.9/bin/kafka-server-start.sh")) {
		t.Errorf("second version: %d downloads (want 3), kafka-server-start.sh calls:\n%s", hits(), startCalls)
	}
	if r := d.Hosts()[0]; r.Kafka != "Apache Kafka 9.9.8" {
		t.Errorf("host record %+v, want Apache Kafka 9.9.8", r)
	}
	sh(b, ssh.Quote(b.xp)+" agent stop --dir "+ssh.Quote(b.dir)+" --grace 5s kafka")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
