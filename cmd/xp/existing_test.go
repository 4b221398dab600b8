package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// clusterProcess runs `xp cluster local` as a process of its own (this
// test binary as xp) until the test ends, and returns its modes.
func clusterProcess(t *testing.T, brokers int) map[string]struct{ Bootstrap, ClientConfig string } {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "cluster", "local", "--brokers", fmt.Sprint(brokers), "--dir", filepath.Join(t.TempDir(), "cluster"), "--json")
	cmd.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	var got struct {
		Modes map[string]struct {
			Bootstrap    string `json:"bootstrap"`
			ClientConfig string `json:"client_config"`
		} `json:"modes"`
	}
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("xp cluster local ended before printing its modes")
		}
		if err := json.Unmarshal([]byte(l), &got); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("xp cluster local printed nothing within 30s")
	}
	modes := map[string]struct{ Bootstrap, ClientConfig string }{}
	for k, v := range got.Modes {
		modes[k] = struct{ Bootstrap, ClientConfig string }{v.Bootstrap, v.ClientConfig}
	}
	return modes
}

func existingPlan(t *testing.T, dir, name string, brokers int, modes ...string) string {
	t.Helper()
	spec := fmt.Sprintf("campaign: %s\nseed: 5\ntreatment: security\nbaseline: plaintext\nfactors:\n  security: [%s]\nfixed:\n"+
		"  platform: existing\n  brokers: %d\n  message_size: 128\n  acks: all\n  target_rate: 100\n  warmup_s: 0\n  duration_s: 1\n  drain_timeout_s: 5\n",
		name, strings.Join(modes, ", "), brokers)
	s, err := planner.ParseSpec(name+".yaml", []byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := planner.Expand(s, &b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunOnExistingCluster drives `xp run` and `xp infra` against an
// embedded cluster another process serves: a row whose mode has no
// endpoint and rows of other brokers are refused with exit 2 and nothing
// written; a campaign runs and leaves no topic; xp infra has nothing to
// provision.
func TestRunOnExistingCluster(t *testing.T) {
	modes := clusterProcess(t, 2)
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("platform: existing\n# the cluster another process runs\nendpoints:\n")
	for _, m := range []string{"plaintext", "tls", "proxy"} {
		fmt.Fprintf(&b, "  %s:\n    bootstrap: [%s]\n    client_config: %s\n", m, strings.ReplaceAll(modes[m].Bootstrap, ",", ", "), modes[m].ClientConfig)
	}
	tgt := writeRunFile(t, dir, "existing.yaml", b.String())

	noEndpoint := existingPlan(t, dir, "noendpoint", 2, "plaintext", "tls", "mtls")
	code, _, stderr := runXP(t, "run", noEndpoint, "--target", tgt)
	if want := "security mode mtls has no endpoint in " + tgt + ":3 (it has plaintext, proxy, tls)"; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
	wrongBrokers := existingPlan(t, dir, "wrongbrokers", 3, "plaintext", "tls")
	code, _, stderr = runXP(t, "run", wrongBrokers, "--target", tgt)
	if want := "have brokers 3 but the cluster of " + tgt + " has 2 brokers"; code != exitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, want)
	}
	for _, db := range []string{"noendpoint.db", "wrongbrokers.db"} {
		if _, err := os.Stat(filepath.Join(dir, db)); !os.IsNotExist(err) {
			t.Errorf("a refused campaign wrote %s: %v", db, err)
		}
	}

	plan := existingPlan(t, dir, "onexisting", 2, "plaintext", "tls", "proxy")
	code, stdout, stderr := runXP(t, "run", plan, "--target", tgt, "--dry-run")
	if code != exitOK || !strings.Contains(stdout, "target: cluster") || !strings.Contains(stdout, "2 brokers") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, _, stderr = runXP(t, "run", plan, "--target", tgt)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	code, stdout, _ = runXP(t, "status", "--db", filepath.Join(dir, "onexisting.db"), "--json")
	if code != exitOK || !strings.Contains(stdout, `"done":3`) {
		t.Errorf("status: exit %d %s", code, stdout)
	}
	props, err := kafkaconf.ReadClientConfig(modes["plaintext"].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := kafkaconf.ClientOpts(props)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := td.Names(); len(names) != 0 {
		t.Errorf("topics left: %v", names)
	}

	// OMB driver files of the cluster's plaintext and sasl_ssl listeners,
	// the second in the Java client's properties, turned into a TARGET.yaml;
	// their bootstrap servers are written PROTOCOL://HOST:PORT, as the
	// Java client also takes them (the plaintext one's first only).
	sasl, err := kafkaconf.ReadClientConfig(modes["sasl_ssl"].ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	drivers := map[string]string{
		"plaintext": "commonConfig: |\n  bootstrap.servers=PLAINTEXT://" + modes["plaintext"].Bootstrap + "\n",
		"sasl_ssl": "commonConfig: |\n  bootstrap.servers=SASL_SSL://" + strings.ReplaceAll(modes["sasl_ssl"].Bootstrap, ",", ",SASL_SSL://") +
			"\n  security.protocol=SASL_SSL\n" +
			"  sasl.mechanism=" + sasl[kafkaconf.SASLMechanism] + "\n  ssl.truststore.type=PEM\n  ssl.truststore.location=" + sasl[kafkaconf.SSLCALocation] + "\n" +
			"  sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
			"    username=\"" + sasl[kafkaconf.SASLUsername] + "\" password=\"" + sasl[kafkaconf.SASLPassword] + "\";\n",
	}
	var importArgs []string
	for m, text := range drivers {
		p := writeRunFile(t, dir, "omb-"+m+".yaml", "name: Kafka\ndriverClass: io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver\n"+
			"replicationFactor: 1\n"+text+"producerConfig: |\n  acks=all\n  linger.ms=1\nconsumerConfig: |\n  auto.offset.reset=earliest\n")
		importArgs = append(importArgs, m+"="+p)
	}
	imported := filepath.Join(dir, "imported.yaml")
	code, _, stderr = runXP(t, append([]string{"plan", "import-omb-driver", "--dir", filepath.Join(dir, "omb-configs"), "-o", imported}, importArgs...)...)
	if code != exitOK || !strings.Contains(stderr, "consumerConfig auto.offset.reset=earliest: not taken over") {
		t.Fatalf("import-omb-driver: exit %d\n%s", code, stderr)
	}
	if st, err := os.Stat(filepath.Join(dir, "omb-configs", "sasl_ssl.properties")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("sasl_ssl.properties: %v %v", err, st)
	}
	fromOMB := existingPlan(t, dir, "fromomb", 2, "plaintext", "sasl_ssl")
	code, _, stderr = runXP(t, "run", fromOMB, "--target", imported)
	if code != exitOK || !strings.Contains(stderr, "endpoint sasl_ssl") {
		b, _ := os.ReadFile(imported)
		t.Fatalf("run on the imported endpoints: exit %d\n%s\n%s", code, b, stderr)
	}

	for _, args := range [][]string{{"infra", "up", plan, "--target", tgt}, {"infra", "down", "--target", tgt}} {
		code, _, stderr := runXP(t, args...)
		if code != exitOK || !strings.Contains(stderr, "platform existing: nothing to provision") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}
