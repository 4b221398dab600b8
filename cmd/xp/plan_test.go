package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const plansDir = "../../plans"

func TestPlanExpand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "q.jsonl")
	cases := []struct {
		name       string
		args       []string
		code       int
		stdoutRows int
		stderr     []string
	}{
		{"security-overhead to stdout", []string{"plan", "expand", plansDir + "/security-overhead.yaml"}, exitOK, 5184,
			[]string{"5184 rows (1728 cells × 3 replicates)", "864  replication_factor > brokers"}},
		{"quickstart to a file", []string{"plan", "expand", plansDir + "/quickstart.yaml", "-o", out}, exitOK, 0,
			[]string{"quickstart: 42 rows"}},
		{"missing spec", []string{"plan", "expand", filepath.Join(dir, "nope.yaml")}, exitUsage, 0, []string{"nope.yaml"}},
		{"no argument", []string{"plan", "expand"}, exitUsage, 0, []string{"accepts 1 arg"}},
		{"output directory missing", []string{"plan", "expand", plansDir + "/quickstart.yaml", "-o", filepath.Join(dir, "no", "q.jsonl")}, exitUsage, 0,
			[]string{"directory " + filepath.Join(dir, "no") + " does not exist"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if n := strings.Count(stdout, "\n"); n != tc.stdoutRows {
				t.Errorf("%d lines on stdout, want %d", n, tc.stdoutRows)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(plansDir + "/quickstart.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("xp plan expand -o differs from the committed plans/quickstart.jsonl")
	}
	// --seed reorders the same runs.
	runs := func(jsonl string) (order []string) {
		for _, l := range strings.Split(strings.TrimSpace(jsonl), "\n") {
			var r struct{ Run string }
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			order = append(order, r.Run)
		}
		return order
	}
	_, seeded, _ := runXP(t, "plan", "expand", plansDir+"/quickstart.yaml", "--seed", "3")
	a, b := runs(seeded), runs(string(want))
	if slices.Equal(a, b) {
		t.Error("--seed 3 gave the spec seed's order")
	}
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Error("--seed 3 gave other runs")
	}
}

// TestPlanExpandBadInput: a bad spec exits 2 naming the line and a fix, and
// leaves an existing output file untouched.
func TestPlanExpandBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(out, []byte("previous\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, spec string
		want       []string
	}{
		{"typo", "campaign: c\nfactors:\n  security: [plaintext, tls]\n  mesage_size: [1024]\nfixed: {brokers: 1, acks: all, target_rate: 10}\n",
			[]string{`bad.yaml:4: factors: unknown row field "mesage_size"; did you mean "message_size"?`}},
		{"every row dropped", "campaign: c\nfactors:\n  security: [plaintext, tls]\nfixed: {brokers: 1, replication_factor: 2, message_size: 100, acks: all, target_rate: 10}\n",
			[]string{"replication_factor > brokers", "every combination was dropped"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := filepath.Join(dir, "bad.yaml")
			if err := os.WriteFile(spec, []byte(tc.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runXP(t, "plan", "expand", spec, "-o", out)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if b, _ := os.ReadFile(out); string(b) != "previous\n" {
				t.Errorf("output file changed to %q", b)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.*")); len(m) > 0 {
				t.Errorf("temporary files left: %v", m)
			}
		})
	}
}

func TestPlanValidate(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(plansDir + "/quickstart.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(good, []byte("\n"))
	lines[0] = bytes.Replace(lines[0], []byte(`"brokers":1`), []byte(`"brokers":1,"brokrs":1`), 1)
	lines[1] = bytes.Replace(lines[1], []byte(`"message_size":1024`), []byte(`"message_size":2048`), 1)
	bad := bytes.Join(lines, nil)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	goodPath, badPath := write("good.jsonl", good), write("bad.jsonl", bad)
	cases := []struct {
		name   string
		path   string
		code   int
		stdout string
		stderr []string
	}{
		{"valid", goodPath, exitOK, "valid: 42 rows, 7 cells, 6 matched sets, 1 infrastructure group", nil},
		{"invalid", badPath, exitFailure, "", []string{
			badPath + `:1: brokrs: unknown field; did you mean "brokers"?`,
			badPath + ":2: cell:",
			"3 problem(s)"}},
		{"missing", filepath.Join(dir, "none.jsonl"), exitUsage, "", []string{"none.jsonl"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, "plan", "validate", tc.path)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout %q lacks %q", stdout, tc.stdout)
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestPlanShow(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"campaign", []string{plansDir + "/security-overhead.jsonl"}, []string{
			"rows         5184", "matched sets 1728", "absent       1728 combinations", "infra groups 2",
			"aws/m5.xlarge brokers=5", "wall time", "cost         USD", "prices     aws: https://aws.amazon.com"}},
		{"spec names drop reasons", []string{plansDir + "/security-overhead.yaml"}, []string{
			"864  min_insync_replicas > replication_factor", "864  replication_factor > brokers"}},
		{"local campaign costs nothing", []string{plansDir + "/quickstart.jsonl"}, []string{
			"security             encrypt, field_encrypt, mtls, plaintext, proxy, sasl_ssl, tls", "cost         USD 0.00",
			// The embedded cluster runs, whatever kafka_version the rows name.
			"kafka_version        kfake (Apache Kafka 3.9.1 with a --target TARGET.yaml naming its kafka: release)",
			"42 rows  local brokers=1 kfake gateways=1 builtin (Apache Kafka 3.9.1 with"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runXP(t, append([]string{"plan", "show"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
	code, stdout, stderr := runXP(t, "plan", "show", "--json", plansDir+"/gateway-cost.jsonl")
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var o struct {
		Rows     int `json:"rows"`
		Estimate struct {
			WallS float64 `json:"wall_s"`
		} `json:"estimate"`
	}
	if err := json.Unmarshal([]byte(stdout), &o); err != nil || o.Rows != 45 || o.Estimate.WallS <= 0 {
		t.Errorf("--json: %+v %v\n%s", o, err, stdout)
	}
	// The worst case of a two-stage design: gateway-cost's 5 replicates
	// taken to 10 doubles its rows and at least doubles its runs' time.
	code, stdout, stderr = runXP(t, "plan", "show", "--json", "--max-replicates", "10", plansDir+"/gateway-cost.jsonl")
	var w struct {
		Estimate struct {
			WallS float64 `json:"wall_s"`
		} `json:"estimate"`
		WorstCase struct {
			MaxReplicates int `json:"max_replicates"`
			Rows          int `json:"rows"`
			Estimate      struct {
				WallS float64 `json:"wall_s"`
			} `json:"estimate"`
		} `json:"two_stage_worst_case"`
	}
	if err := json.Unmarshal([]byte(stdout), &w); code != exitOK || err != nil || w.WorstCase.Rows != 90 || w.WorstCase.MaxReplicates != 10 ||
		w.WorstCase.Estimate.WallS < 1.9*w.Estimate.WallS {
		t.Errorf("--max-replicates 10: exit %d %+v %v\n%s%s", code, w, err, stdout, stderr)
	}
	if code, stdout, _ := runXP(t, "plan", "show", "--max-replicates", "10", plansDir+"/gateway-cost.jsonl"); code != exitOK ||
		!strings.Contains(stdout, "two-stage    worst case at 10 replicates a configuration: 90 rows") {
		t.Errorf("--max-replicates text: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runXP(t, "plan", "show", "--max-replicates", "2", plansDir+"/gateway-cost.jsonl"); code != exitUsage ||
		!strings.Contains(stderr, "below the plan's 5 replicates") {
		t.Errorf("--max-replicates below the plan: exit %d %s", code, stderr)
	}
	bad := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(bad, []byte("currency: USD\nplatfroms: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runXP(t, "plan", "show", "--prices", bad, plansDir+"/quickstart.jsonl"); code != exitUsage || !strings.Contains(stderr, "platfroms") {
		t.Errorf("bad price table: exit %d, stderr %s", code, stderr)
	}
}

func TestPlanImportOMB(t *testing.T) {
	dir := t.TempDir()
	w1 := filepath.Join(dir, "1-topic.yaml")
	w2 := filepath.Join(dir, "10-topics.yaml")
	workload := "name: w\ntopics: %s\npartitionsPerTopic: 4\nmessageSize: 1024\nsubscriptionsPerTopic: 1\nconsumerPerSubscription: 1\nproducersPerTopic: 1\nproducerRate: 1000\ntestDurationMinutes: 1\nwarmupDurationMinutes: 1\n"
	if err := os.WriteFile(w1, []byte(strings.Replace(workload, "%s", "1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w2, []byte(strings.Replace(workload, "%s", "10", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "omb.yaml")
	code, _, stderr := runXP(t, "plan", "import-omb", w1, w2, "--security", "plaintext,tls", "--replicates", "2", "-o", spec)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	code, stdout, stderr := runXP(t, "plan", "expand", spec)
	if code != exitOK {
		t.Fatalf("expanding the imported spec: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stdout, "\n"); n != 8 {
		t.Errorf("imported spec expands to %d rows, want 2 workloads × 2 modes × 2 replicates", n)
	}
	typo := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(typo, []byte(strings.Replace(strings.Replace(workload, "%s", "1", 1), "messageSize", "messagesize", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runXP(t, "plan", "import-omb", typo)
	if code != exitUsage || !strings.Contains(stderr, `typo.yaml:4: unknown workload key "messagesize"; did you mean "messageSize"?`) || stdout != "" {
		t.Errorf("typo: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}
