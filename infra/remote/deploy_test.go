package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/infra/pki"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// xpBuild is the xp binary the hosts run, built once for the package's
// tests (linking it takes seconds) and removed by TestMain.
var xpBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildXP builds the xp binary the hosts run, once.
func buildXP(t testing.TB) string {
	t.Helper()
	xpBuild.once.Do(func() {
		if xpBuild.dir, xpBuild.err = os.MkdirTemp("", "xp-remote-test-"); xpBuild.err != nil {
			return
		}
		xpBuild.path = filepath.Join(xpBuild.dir, "xp")
		cmd := exec.Command("go", "build", "-o", xpBuild.path, "github.com/xp-bench/xp/cmd/xp")
		if out, err := cmd.CombinedOutput(); err != nil {
			xpBuild.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if xpBuild.err != nil {
		t.Fatal(xpBuild.err)
	}
	return xpBuild.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if xpBuild.dir != "" {
		os.RemoveAll(xpBuild.dir)
	}
	os.Exit(code)
}

// sshPool is a pool logging in to n's hosts, its known_hosts new.
func sshPool(t *testing.T, n *netnstest.Net, log io.Writer) *ssh.Pool {
	t.Helper()
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey,
		KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDeployEmbedded deploys to three namespace hosts (a broker and two
// clients), runs the embedded cluster on the broker host's address, splits
// loads over the clients, samples telemetry on every host, fetches logs,
// and tears down leaving no xp process behind.
func TestDeployEmbedded(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 3)
	log := &syncBuf{}
	pool := sshPool(t, n, log)
	roles := []string{planner.RoleBroker, planner.RoleClient, planner.RoleClient}
	names := []string{"broker-0", "client-0", "client-1"}
	var hosts []Host
	for i, h := range n.Hosts {
		hosts = append(hosts, Host{Name: names[i], Role: roles[i], SSH: h.SSHAddr(), Private: h.Addr, InstanceType: "netns"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	torn := false
	defer func() {
		if !torn {
			d.Teardown(context.Background())
		}
	}()
	for _, r := range d.Hosts() {
		if r.Kernel == "" || r.CPUs == 0 || r.MemoryMiB == 0 || r.InstanceType != "netns" {
			t.Errorf("host record %+v", r)
		}
	}
	// A second deploy uploads nothing: the hosts have the same binary.
	before := strings.Count(log.String(), "xp uploaded")
	if _, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log}); err != nil {
		t.Fatal(err)
	}
	if after := strings.Count(log.String(), "xp uploaded"); before != 3 || after != before {
		t.Errorf("uploads: %d on first deploy (want 3), %d more on the second (want 0)", before, after-before)
	}

	modes, err := d.StartEmbedded(ctx, 2)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	// Without gateway hosts too, the CA is this machine's: the broker
	// host's in-process gateways serve with certificates issued here, and
	// no host holds the CA's key.
	for _, h := range d.hosts {
		out, err := h.c.Output(ctx, "find "+ssh.Quote(path.Dir(h.dir))+" -name "+pki.CAKeyFile)
		if err != nil || strings.TrimSpace(string(out)) != "" {
			t.Errorf("%s: the CA's key: %q (%v)", h.Name, out, err)
		}
	}
	if d.ca == nil || !d.ca.CanSign() {
		t.Error("no authority that can sign on this machine")
	}
	for _, m := range []string{"plaintext", "tls", "mtls", "sasl_ssl", "proxy", "encrypt"} {
		b := strings.Join(modes[m].Bootstrap, ",")
		if b == "" || !strings.HasPrefix(b, n.Hosts[0].Addr+":") {
			t.Errorf("mode %s bootstrap %q, want on the broker host %s", m, b, n.Hosts[0].Addr)
		}
	}

	tel := d.StartTelemetry(ctx)
	for _, mode := range []string{"tls", "encrypt"} {
		res, parts, err := d.RunLoad(ctx, Load{Mode: mode, Rate: 301, Timeout: time.Minute,
			Flags: []string{"--message-size", "128", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "10s", "--partitions", "2"}})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if len(parts) != 2 || parts[0].Result.Config.Rate != 151 || parts[1].Result.Config.Rate != 150 {
			t.Fatalf("%s: parts %d, rates %v/%v, want 151 and 150", mode, len(parts), parts[0].Result.Config.Rate, parts[1].Result.Config.Rate)
		}
		if !res.Healthy || res.TargetRate != 301 || res.Published != parts[0].Result.Published+parts[1].Result.Published || res.Published < 500 {
			t.Errorf("%s: merged healthy=%v reasons=%v rate=%v published=%d", mode, res.Healthy, res.Reasons, res.TargetRate, res.Published)
		}
	}
	// Client java: the release uploaded to both client hosts, each runs
	// xp's Java load generator, and their results merge.
	jname, err := d.PrepareJavaClient(ctx, disttest.JavaClient(t).Path)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	jres, jparts, err := d.RunLoad(ctx, Load{Mode: "tls", Rate: 301, Timeout: 2 * time.Minute, JavaClient: jname,
		Flags: []string{"--client", "java", "--message-size", "128", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "20s", "--partitions", "2"}})
	if err != nil {
		t.Fatalf("client java: %v", err)
	}
	if !jres.Healthy || jres.Published != jparts[0].Result.Published+jparts[1].Result.Published || jres.Published < 500 || jres.Errors != 0 {
		t.Errorf("client java: merged healthy=%v reasons=%v published=%d errors=%d", jres.Healthy, jres.Reasons, jres.Published, jres.Errors)
	}
	for _, p := range jparts {
		if p.Result.Client.Name != planner.ClientJava || !strings.HasPrefix(p.Result.Client.Version, "kafka-clients ") {
			t.Errorf("client java on %s: the part says client %+v", p.Host, p.Result.Client)
		}
	}
	// Client librdkafka: its release uploaded too, each host runs xp's
	// librdkafka load generator (only glibc needed there), the results
	// merge.
	rname, err := d.PrepareRdkafkaClient(ctx, disttest.RdkafkaClient(t).Path)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	rres, rparts, err := d.RunLoad(ctx, Load{Mode: "tls", Rate: 301, Timeout: 2 * time.Minute, RdkafkaClient: rname,
		Flags: []string{"--client", "librdkafka", "--message-size", "128", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "20s", "--partitions", "2"}})
	if err != nil {
		t.Fatalf("client librdkafka: %v", err)
	}
	if !rres.Healthy || rres.Published != rparts[0].Result.Published+rparts[1].Result.Published || rres.Published < 500 || rres.Errors != 0 {
		t.Errorf("client librdkafka: merged healthy=%v reasons=%v published=%d errors=%d", rres.Healthy, rres.Reasons, rres.Published, rres.Errors)
	}
	for _, p := range rparts {
		if p.Result.Client.Name != planner.ClientLibrdkafka || !strings.HasPrefix(p.Result.Client.Version, "librdkafka ") {
			t.Errorf("client librdkafka on %s: the part says client %+v", p.Host, p.Result.Client)
		}
	}
	samples, err := tel.Stop()
	if err != nil {
		t.Error(err)
	}
	per := map[string]int{}
	for _, s := range samples {
		if s.Metric == "cpu_busy" {
			per[s.Host]++
		}
	}
	for _, nm := range names {
		if per[nm] < 2 {
			t.Errorf("host %s: %d telemetry samples of cpu_busy, want one a second", nm, per[nm])
		}
	}

	// A client that cannot run fails the run, with its output kept.
	_, _, err = d.RunLoad(ctx, Load{Mode: "tls", Rate: 100, Flags: []string{"--message-size", "1"}})
	var ce *ClientError
	if !errors.As(err, &ce) || !strings.Contains(ce.Output, "message") {
		t.Errorf("bad loadgen flags: %v", err)
	}

	// A client host whose link goes down mid-run fails that run, naming
	// it; with the link back, the next run succeeds.
	client1 := n.Hosts[2]
	tel2 := d.StartTelemetry(ctx)
	linkDown := make(chan error, 1)
	go func() {
		// Down once the loads run (the broker has seen the clients'
		// topics), not at a guessed time.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if strings.Contains(log.String(), "xp loadgen") {
				break
			}
		}
		linkDown <- client1.LinkDown()
	}()
	_, _, err = d.RunLoad(ctx, Load{Mode: "plaintext", Rate: 200, Timeout: 12 * time.Second,
		Flags: []string{"--message-size", "128", "--warmup", "1s", "--duration", "3s", "--drain-timeout", "5s", "--partitions", "2"}})
	if lerr := <-linkDown; lerr != nil {
		t.Fatal(lerr)
	}
	if !errors.As(err, &ce) || ce.Host != "client-1" {
		t.Errorf("a run whose client lost its link: %v, want a ClientError of client-1", err)
	}
	if err := client1.LinkUp(); err != nil {
		t.Fatal(err)
	}
	tel2.Stop()
	pool.Forget(client1.SSHAddr())
	if err := d.Reconnect(ctx); err != nil {
		t.Fatal(err)
	}
	if res, _, err := d.RunLoad(ctx, Load{Mode: "plaintext", Rate: 200, Timeout: time.Minute,
		Flags: []string{"--message-size", "128", "--warmup", "1s", "--duration", "1s", "--drain-timeout", "10s", "--partitions", "2"}}); err != nil || !res.Healthy {
		t.Errorf("the run after the link came back: %v (healthy %v, %v)", err, res.Healthy, res.Reasons)
	}

	logs := d.Logs(ctx, 1<<20)
	zr, err := gzip.NewReader(bytes.NewReader(logs["broker-0/cluster.log"]))
	if err != nil {
		t.Fatalf("broker log: %v (have %d logs)", err, len(logs))
	}
	text, _ := io.ReadAll(zr)
	if !strings.Contains(string(text), "xp agent: cluster starting") {
		t.Errorf("broker log:\n%s", text)
	}

	if err := d.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	torn = true
	for _, h := range n.Hosts {
		waitNoXP(t, h)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatal(err)
	}
}

// A machine still booting gives dial timeouts, then refusals, for a while:
// Deploy waits for it (Options.Wait) instead of failing the group on the
// first timeout, and says which host it is waiting for.
func TestDeployWaitsForBootingHost(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 2)
	log := &syncBuf{}
	pool := sshPool(t, n, log)
	late := n.Hosts[1]
	if err := late.StopSSHD(); err != nil {
		t.Fatal(err)
	}
	if err := late.Silence(); err != nil {
		t.Fatal(err)
	}
	// The machine's network and sshd come up 20 s from now: more than
	// one 15 s dial timeout.
	booted := make(chan error, 1)
	timer := time.AfterFunc(20*time.Second, func() {
		err := late.Unsilence()
		if err == nil {
			err = late.StartSSHD()
		}
		booted <- err
	})
	defer timer.Stop()
	hosts := []Host{{Name: "broker-0", Role: planner.RoleBroker, SSH: n.Hosts[0].SSHAddr(), Private: n.Hosts[0].Addr},
		{Name: "client-0", Role: planner.RoleClient, SSH: late.SSHAddr(), Private: late.Addr}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log, Wait: time.Minute})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	if err := <-booted; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "ssh: waiting for client-0 ("+late.SSHAddr()+": ") {
		t.Errorf("the log does not say which host xp waits for:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "i/o timeout") {
		t.Errorf("the host never timed out (the test's silence did not hold):\n%s", log.String())
	}

	if err := d.Teardown(ctx); err != nil {
		t.Fatal(err)
	}

	// A host that never answers fails the deploy after Wait, naming it.
	if err := late.StopSSHD(); err != nil {
		t.Fatal(err)
	}
	if err := late.Silence(); err != nil {
		t.Fatal(err)
	}
	pool2 := sshPool(t, n, log)
	_, err = Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool2, Binary: bin, Log: log, Wait: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "no answer within 3s (ssh.wait) from client-0 ("+late.SSHAddr()) {
		t.Fatalf("deploy to a host that never answers: %v", err)
	}
}

// The files a cluster.json names are written at the same paths on every
// client host: only paths under the campaign's directory are taken.
func TestClientFilesStayUnderTheCampaignDirectory(t *testing.T) {
	const camp = "/home/u/xp/c1"
	files := map[string]string{
		camp + "/broker-0/cluster/tls.properties":  "bootstrap.servers=10.0.0.1:9093\nsecurity.protocol=SSL\nssl.ca.location=" + camp + "/broker-0/cluster/pki/ca.pem\n",
		camp + "/broker-0/cluster/pki/ca.pem":      "CA",
		camp + "/broker-0/cluster/evil.properties": "bootstrap.servers=10.0.0.1:9093\nsecurity.protocol=SSL\nssl.ca.location=/home/u/.ssh/authorized_keys\n",
	}
	read := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("no %s", p)
	}
	got, err := clientFiles(camp, local.Modes{"tls": {ClientConfig: camp + "/broker-0/cluster/tls.properties"}}, read)
	if err != nil || len(got) != 2 || string(got[camp+"/broker-0/cluster/pki/ca.pem"]) != "CA" {
		t.Fatalf("%v %v", got, err)
	}
	for name, cfg := range map[string]string{
		"config outside":       "/etc/cron.d/xp",
		"config climbing out":  camp + "/../../.ssh/authorized_keys",
		"certificate outside":  camp + "/broker-0/cluster/evil.properties",
		"another campaign":     "/home/u/xp/c10/x.properties",
		"the directory's name": camp,
	} {
		if _, err := clientFiles(camp, local.Modes{"tls": {ClientConfig: cfg}}, read); err == nil || !strings.Contains(err.Error(), "is not under the campaign directory "+camp) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Telemetry streams live as long as the deployment, past the pool's
// command timeout; a host whose link drops is left out of the readings
// (a gap, not its last values) until its stream, started again on a new
// connection, streams again; loads and log fetches dial hosts whose
// connection broke again, and name a host that cannot be reached.
func TestStreamsAndLoadsSurviveDroppedConnections(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 2)
	log := &syncBuf{}
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Log: log,
		CommandTimeout: 2 * time.Second, KeepaliveInterval: 200 * time.Millisecond, Retries: 1, DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	broker, client := n.Hosts[0], n.Hosts[1]
	hosts := []Host{{Name: "broker-0", Role: planner.RoleBroker, SSH: broker.SSHAddr(), Private: broker.Addr},
		{Name: "client-0", Role: planner.RoleClient, SSH: client.SSHAddr(), Private: client.Addr}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	defer d.Teardown(context.Background())
	if _, err := d.StartEmbedded(ctx, 1); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	// poll waits for cond, failing with what after 30 s.
	poll := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s\nlog:\n%s", what, log.String())
			}
		}
	}
	fresh := func(tel *Telemetry, host string, after time.Time) bool {
		r, ok := tel.Latest()[host]
		return ok && r.Time.After(after)
	}

	// No deadline in the context: the pool's command timeout (2 s) would
	// apply to any other command.
	started := time.Now()
	tel := d.StartTelemetry(context.Background())
	for _, h := range []string{"broker-0", "client-0"} {
		poll(h+" streams past the command timeout", func() bool { return fresh(tel, h, started.Add(4*time.Second)) })
	}

	if err := client.LinkDown(); err != nil {
		t.Fatal(err)
	}
	poll("client-0 in a gap", func() bool {
		_, ok := tel.Latest()["client-0"]
		return !ok && tel.Err() != nil && strings.Contains(tel.Err().Error(), "telemetry of client-0: no sample for")
	})
	if _, ok := tel.Latest()["broker-0"]; !ok {
		t.Errorf("broker-0 left out while only client-0 is gone")
	}
	poll("the dead connection closed", func() bool {
		return strings.Contains(log.String(), "ssh "+client.SSHAddr()+": no answer to keepalives")
	})
	if err := client.LinkUp(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	poll("client-0 streaming again", func() bool { return fresh(tel, "client-0", back) })
	if _, err := tel.Stop(); err == nil || !strings.Contains(err.Error(), "telemetry of client-0") {
		t.Errorf("Stop does not say client-0's stream ended: %v", err)
	}

	// Without telemetry dialling them again, both connections break; the
	// next load and log fetch dial again.
	for _, h := range n.Hosts {
		if err := h.LinkDown(); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range n.Hosts {
		poll(h.Name+"'s connection closed", func() bool {
			return strings.Count(log.String(), "ssh "+h.SSHAddr()+": no answer to keepalives") >= map[bool]int{true: 2, false: 1}[h == client]
		})
	}
	for _, h := range n.Hosts {
		if err := h.LinkUp(); err != nil {
			t.Fatal(err)
		}
	}
	load := Load{Mode: "plaintext", Rate: 100, Timeout: time.Minute,
		Flags: []string{"--message-size", "128", "--warmup", "0s", "--duration", "1s", "--drain-timeout", "10s", "--partitions", "1"}}
	if res, _, err := d.RunLoad(ctx, load); err != nil || !res.Healthy {
		t.Fatalf("a load after the connections broke: %v (%+v)\nlog:\n%s", err, res.Reasons, log.String())
	}
	if tails, err := d.logTails(ctx, 1<<10); err != nil || len(tails) == 0 {
		t.Fatalf("logs after the connections broke: %v (%d)", err, len(tails))
	}

	// A client host that stays away fails the load, named, in bounded
	// time.
	if err := client.LinkDown(); err != nil {
		t.Fatal(err)
	}
	poll("client-0's connection closed again", func() bool {
		return strings.Count(log.String(), "ssh "+client.SSHAddr()+": no answer to keepalives") >= 3
	})
	_, _, err = d.RunLoad(ctx, load)
	var ce *ClientError
	if !errors.As(err, &ce) || ce.Host != "client-0" {
		t.Errorf("a load on a host that cannot be reached: %v", err)
	}
	if err := client.LinkUp(); err != nil {
		t.Fatal(err)
	}
}
