package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/internal/disttest"
)

// runXPEnv is runXP with the process environment (PATH, JAVA_HOME, HOME)
// as xp's, except what over sets.
func runXPEnv(t *testing.T, over map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	st, out, errb := testState()
	st.getenv = func(k string) string {
		if v, ok := over[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	code = execute(st, args)
	return code, out.String(), errb.String()
}

// apacheTarget writes a TARGET.yaml of platform local naming the Kafka
// releases of out/dist (4.x and 3.9.x), with a small heap.
func apacheTarget(t *testing.T, dir string, rels ...disttest.Release) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("platform: local\nkafka:\n  heap: 384m\n  releases:\n")
	for _, r := range rels {
		fmt.Fprintf(&b, "    - {distribution: %s, sha512: %s}\n", r.Path, r.SHA512)
	}
	return writeRunFile(t, dir, "kafka.yaml", b.String())
}

// TestRunOnApacheKafka runs a campaign with xp run on Apache Kafka from
// out/dist under the local target: every direct mode and the encrypt
// gateway on one 4.x broker, plaintext and sasl_ssl on three 4.x brokers
// and on one 3.9.x broker (kafka_version crossed over two releases, each
// group on its own). Every row is done; each attempt records apache, the
// version its row asked for, the Java runtime and the JVM flags, and its
// group says so; every broker JVM is sampled; runs.csv and the report name
// the brokers. kcat, an independent client, reads a record xp's load
// wrote, over SASL_SSL with PLAIN. No JVM is left afterwards.
func TestRunOnApacheKafka(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat is required (apt-get install kcat)")
	}
	r4, r3 := disttest.Kafka(t, 4), disttest.Kafka(t, 3)
	dir := t.TempDir()
	tgt := apacheTarget(t, dir, r4, r3)
	spec := fmt.Sprintf(`campaign: apache
seed: 7
replicates: 1
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls, mtls, sasl_ssl, encrypt]
  kafka_version: [%[1]s, %[2]s]
  brokers: [1, 3]
fixed:
  platform: local
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 10
exclude:
  - {kafka_version: %[2]s, brokers: 3}
  - {kafka_version: %[2]s, security: tls}
  - {kafka_version: %[2]s, security: mtls}
  - {kafka_version: %[2]s, security: encrypt}
  - {brokers: 3, security: tls}
  - {brokers: 3, security: mtls}
  - {brokers: 3, security: encrypt}
`, r4.Version, r3.Version)
	plan := expandSpec(t, dir, "apache", spec)
	db := filepath.Join(dir, "apache.db")
	work := db + ".work"

	// kcat reads, once a group is up and measuring, any record of a topic
	// of xp's load (xp-...) through that group's SASL_SSL listener with
	// PLAIN (Debian's kcat links librdkafka 2.0, whose SCRAM Kafka 4.x
	// refuses: librdkafka fixed it in 2.6.1); it tries again on a later
	// group when the one it joined went down first.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kcatOut := make(chan string, 1)
	go func() {
		var last string
		for try := 0; try < 3 && ctx.Err() == nil; try++ {
			for !measuring(db) && ctx.Err() == nil {
				time.Sleep(50 * time.Millisecond)
			}
			groups, _ := filepath.Glob(filepath.Join(work, "group-*", "sasl_ssl-plain.properties"))
			if len(groups) == 0 {
				continue
			}
			kctx, kcancel := context.WithTimeout(ctx, time.Minute)
			var out, errb bytes.Buffer
			cmd := exec.CommandContext(kctx, kcat, "-F", groups[len(groups)-1], "-G", "kcat-check", "-X", "auto.offset.reset=earliest",
				"-X", "topic.metadata.refresh.interval.ms=500", "-c", "1", "-f", "%t|%h|%S\n", "^xp-.*")
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			kcancel()
			last = fmt.Sprintf("%s (%v; %s)", strings.TrimSpace(out.String()), err, lastLine(errb.String()))
			if err == nil {
				break
			}
		}
		kcatOut <- last
	}()

	// The warm-up of each group is bounded (TestWarmupAndOverloadOnApacheKafka
	// checks it): three groups at the default cap could take minutes.
	code, stdout, stderr := runXPEnv(t, nil, "run", plan, "--db", db, "--target", tgt, "--warmup-cap", "20s")
	if code != exitOK {
		t.Fatalf("xp run: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	select {
	case got := <-kcatOut:
		// A record of a direct row is the load's 256 bytes; one of the
		// encrypt row rests on the broker as the gateway sealed it,
		// larger and marked xp.enc.
		direct := strings.Contains(got, "|256 ")
		sealed := strings.Contains(got, ",xp.enc=1|") && !direct
		if !strings.HasPrefix(got, "xp-") || !strings.Contains(got, "|xp-t=") || !direct && !sealed {
			t.Errorf("kcat over sasl_ssl (PLAIN) read %q, want a record of xp's load with its xp-t header, of 256 bytes or sealed by the encrypt gateway", got)
		}
	case <-time.After(time.Minute):
		t.Error("kcat read no record of xp's load over sasl_ssl (PLAIN)")
	}
	cancel()

	raw, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT a.environment, r.plan_row, coalesce(a.outcome, '') FROM attempt a JOIN row r ON r.run = a.run`)
	if err != nil {
		t.Fatal(err)
	}
	type groupKey struct {
		version string
		brokers int
	}
	seen := map[groupKey][]string{}
	for rows.Next() {
		var envText, rowText, outcome string
		if err := rows.Scan(&envText, &rowText, &outcome); err != nil {
			t.Fatal(err)
		}
		var env struct {
			Security string         `json:"security"`
			Group    string         `json:"group"`
			Broker   *target.Broker `json:"broker"`
		}
		var row struct {
			KafkaVersion string `json:"kafka_version"`
			Brokers      int    `json:"brokers"`
		}
		json.Unmarshal([]byte(envText), &env)
		json.Unmarshal([]byte(rowText), &row)
		if outcome != "done" {
			t.Errorf("%s on Kafka %s × %d: outcome %q", env.Security, row.KafkaVersion, row.Brokers, outcome)
		}
		b := env.Broker
		if b == nil || b.Kind != target.BrokerApache || b.Version != row.KafkaVersion || !strings.Contains(b.Java, "version \"") ||
			!slices.Contains(b.JVMFlags, "-Xmx384m") || !slices.Contains(b.JVMFlags, "-XX:+UseG1GC") {
			t.Errorf("%s on Kafka %s: broker %+v, want apache %s with Java and JVM flags", env.Security, row.KafkaVersion, b, row.KafkaVersion)
		}
		if want := fmt.Sprintf("local brokers=%d apache=%s ", row.Brokers, row.KafkaVersion); !strings.HasPrefix(env.Group, want) {
			t.Errorf("group %q, want it to start %q", env.Group, want)
		}
		k := groupKey{row.KafkaVersion, row.Brokers}
		seen[k] = append(seen[k], env.Security)
	}
	want := map[groupKey]int{{r4.Version, 1}: 5, {r4.Version, 3}: 2, {r3.Version, 1}: 2}
	for k, n := range want {
		if len(seen[k]) != n {
			t.Errorf("Kafka %s × %d brokers ran %v, want %d rows", k.version, k.brokers, seen[k], n)
		}
	}
	var hosts []string
	hr, err := raw.Query(`SELECT DISTINCT host FROM telemetry ORDER BY host`)
	if err != nil {
		t.Fatal(err)
	}
	for hr.Next() {
		var h string
		hr.Scan(&h)
		hosts = append(hosts, h)
	}
	if !slices.Equal(hosts, []string{"broker-1", "broker-2", "broker-3", "client", "gateway"}) {
		t.Errorf("telemetry of hosts %v, want every broker JVM, the gateway and the client", hosts)
	}

	out := filepath.Join(dir, "analysis")
	if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out); code != exitOK && code != exitInvalidRuns {
		t.Fatalf("xp analyse: exit %d: %s", code, stderr)
	}
	f, err := os.Open(filepath.Join(out, "runs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	bi, ri, vi := slices.Index(recs[0], "broker"), slices.Index(recs[0], "broker_runtime"), slices.Index(recs[0], "kafka_version")
	if bi < 0 || ri < 0 || vi < 0 {
		t.Fatalf("runs.csv header %v: want broker, broker_runtime and kafka_version", recs[0])
	}
	for _, r := range recs[1:] {
		if r[bi] != "apache "+r[vi] || !strings.Contains(r[ri], "-Xmx384m") {
			t.Errorf("runs.csv row %v: broker %q runtime %q", r[:3], r[bi], r[ri])
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{r4.Version, r3.Version} {
		if !strings.Contains(string(report), "apache "+v+" on ") {
			t.Errorf("report.html's environment does not name apache %s", v)
		}
	}
	if left, _ := kafkaproc.Leftovers(work); len(left) > 0 {
		t.Errorf("broker JVMs %v left after xp run", left)
	}
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

// TestRunRefusesApacheInputs: a release whose checksum differs, a Java too
// old for the release (a java on PATH that says it is 11) and a heap this
// machine cannot hold are refused by xp run before any group starts: exit
// 2, the file and line, and the fix.
func TestRunRefusesApacheInputs(t *testing.T) {
	r4 := disttest.Kafka(t, 4)
	dir := t.TempDir()
	plan := expandSpec(t, dir, "refused", fmt.Sprintf(`campaign: refused
factors:
  security: [plaintext, tls]
fixed: {platform: local, brokers: 1, message_size: 256, acks: all, target_rate: 100, kafka_version: %s}
`, r4.Version))
	oldJava := t.TempDir()
	os.WriteFile(filepath.Join(oldJava, "java"), []byte("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n"), 0o755)
	head := fmt.Sprintf("platform: local\nkafka:\n  distribution: %s\n  sha512: %s\n", r4.Path, r4.SHA512)
	for _, c := range []struct {
		name, target string
		env          map[string]string
		want         []string
	}{
		{"checksum differs", strings.Replace(head, r4.SHA512, strings.Repeat("1", 128), 1), nil,
			[]string{"t.yaml:3: kafka: " + r4.Path + " has SHA-512", "download it again, or correct sha512"}},
		{"java too old", head, map[string]string{"JAVA_HOME": "", "PATH": oldJava},
			[]string{"t.yaml:3: kafka: Kafka " + r4.Version + " needs Java 17 or later", "is Java 11", "install Java 17 or later"}},
		{"heap too large", head + "  heap: 65536g\n", nil,
			[]string{"t.yaml:5: kafka.heap 65536g does not fit", "lower kafka.heap"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			tgt := writeRunFile(t, d, "t.yaml", c.target)
			db := filepath.Join(d, "c.db")
			code, _, stderr := runXPEnv(t, c.env, "run", plan, "--db", db, "--target", tgt)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %s", code, exitUsage, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if _, err := os.Stat(db); err == nil {
				t.Errorf("a refused run wrote %s", db)
			}
		})
	}
}

// TestKilledXPLeavesNoBroker: xp killed with SIGKILL under --keep leaves
// its broker running (kept); the next xp run on that db stops it before
// its own group starts; killed with SIGKILL without --keep, it leaves no
// broker JVM at all.
func TestKilledXPLeavesNoBroker(t *testing.T) {
	t.Parallel()
	r4 := disttest.Kafka(t, 4)
	dir := t.TempDir()
	tgt := apacheTarget(t, dir, r4)
	plan := expandSpec(t, dir, "killed", fmt.Sprintf(`campaign: killed
factors:
  security: [plaintext, tls]
fixed: {platform: local, brokers: 1, message_size: 256, acks: all, target_rate: 100, kafka_version: %s, warmup_s: 1, duration_s: 600, drain_timeout_s: 5}
`, r4.Version))
	db := filepath.Join(dir, "killed.db")
	work := db + ".work"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// start runs xp in a process of its own and returns it once a broker
	// JVM other than those in old serves its group.
	start := func(old []int, args ...string) (*exec.Cmd, int) {
		t.Helper()
		// No group warm-up: the runs are killed in their first row.
		cmd := exec.Command(self, append([]string{"run", plan, "--db", db, "--target", tgt, "--warmup-cap", "0"}, args...)...)
		cmd.Env = append(os.Environ(), "XP_TEST_AS_XP=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(6 * time.Minute)
		for time.Now().Before(deadline) {
			pids, _ := kafkaproc.Leftovers(work)
			for _, p := range pids {
				if !slices.Contains(old, p) && measuring(db) {
					return cmd, p
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("xp %v never measured on a broker of its own: %s", args, stderr.String())
		return nil, 0
	}
	kill := func(cmd *exec.Cmd) {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	t.Cleanup(func() { kafkaproc.Sweep(work) })

	xp1, kept := start(nil, "--keep")
	kill(xp1)
	if !slices.Contains(leftovers(work), kept) {
		t.Fatalf("the broker %d of a run with --keep did not outlive xp", kept)
	}
	xp2, second := start([]int{kept}, "--resume")
	if slices.Contains(leftovers(work), kept) {
		t.Errorf("the kept broker %d still runs beside the next run's broker %d", kept, second)
	}
	kill(xp2)
	deadline := time.Now().Add(30 * time.Second)
	for len(leftovers(work)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := leftovers(work); len(left) > 0 {
		t.Fatalf("broker JVMs %v outlived xp killed with SIGKILL", left)
	}
}

func leftovers(dir string) []int {
	p, _ := kafkaproc.Leftovers(dir)
	return p
}

// measuring reports whether the campaign db has an attempt in its
// measurement phase.
func measuring(db string) bool {
	raw, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return false
	}
	defer raw.Close()
	var n int
	err = raw.QueryRow(`SELECT count(*) FROM attempt WHERE phase = 'measure' AND outcome IS NULL`).Scan(&n)
	return err == nil && n > 0
}
