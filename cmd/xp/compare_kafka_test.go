package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
	"github.com/xp-bench/xp/analysis/export"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/internal/disttest"
)

// readCSV reads a whole CSV file, header first.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

// TestCompareOnApacheKafka runs one small plan (plaintext and tls, three
// replicates of two seconds) twice on Apache Kafka 4.x under the local
// target, and compares the two campaigns: every headline row of either
// campaign's xp analyse is in compare.csv with that analysis's estimate
// and interval, and says whether it replicated; the summary counts them
// with the 83 % reference.
func TestCompareOnApacheKafka(t *testing.T) {
	t.Parallel()
	r4 := disttest.Kafka(t, 4)
	dir := t.TempDir()
	tgt := apacheTarget(t, dir, r4)
	plan := expandSpec(t, dir, "replicate", fmt.Sprintf(`campaign: replicate
seed: 34
replicates: 3
treatment: security
baseline: plaintext
factors:
  security: [plaintext, tls]
fixed:
  platform: local
  kafka_version: %s
  brokers: 1
  message_size: 256
  acks: all
  target_rate: 200
  warmup_s: 1
  duration_s: 2
  drain_timeout_s: 10
`, r4.Version))
	headlines := map[string][]string{} // db -> its headline rows, as compare.csv keys them
	var dbs []string
	for _, name := range []string{"first", "second"} {
		db := filepath.Join(dir, name+".db")
		if code, stdout, stderr := runXPEnv(t, nil, "run", plan, "--db", db, "--target", tgt); code != exitOK {
			t.Fatalf("xp run %s: exit %d\n%s\n%s", name, code, stdout, stderr)
		}
		if left, _ := kafkaproc.Leftovers(db + ".work"); len(left) > 0 {
			t.Fatalf("broker JVMs %v left after xp run", left)
		}
		out := filepath.Join(dir, name+"-analysis")
		if code, _, stderr := runXP(t, "analyse", "--db", db, "--out", out); code != exitOK {
			t.Fatalf("xp analyse %s: exit %d: %s", name, code, stderr)
		}
		effects := readCSV(t, filepath.Join(out, "effects.csv"))
		col := func(n string) int { return slices.Index(effects[0], n) }
		for _, e := range effects[1:] {
			if e[col("statistic")] == analysis.StatHeadline && e[col("scope")] == analysis.ScopeAll {
				headlines[db] = append(headlines[db], strings.Join([]string{e[col("treatment")], e[col("metric")],
					e[col("n")], e[col("estimate")], e[col("ci_low")], e[col("ci_high")]}, "|"))
			}
		}
		if len(headlines[db]) == 0 {
			t.Fatalf("%s has no headline row", db)
		}
		dbs = append(dbs, db)
	}

	out := filepath.Join(dir, "compare")
	code, stdout, stderr := runXP(t, "compare", dbs[0], dbs[1], "--out", out)
	if code != exitOK {
		t.Fatalf("xp compare: exit %d\n%s\n%s", code, stdout, stderr)
	}
	rows := readCSV(t, filepath.Join(out, "compare.csv"))
	if !slices.Equal(rows[0], export.CompareHeader) {
		t.Fatalf("compare.csv header %v", rows[0])
	}
	col := func(n string) int { return slices.Index(export.CompareHeader, n) }
	seen := map[string][]string{}
	both := 0
	for _, r := range rows[1:] {
		for side, db := range map[string]string{"a": dbs[0], "b": dbs[1]} {
			if r[col(side+"_estimate")] != "" {
				seen[db] = append(seen[db], strings.Join([]string{r[col("treatment")], r[col("metric")],
					r[col(side+"_n")], r[col(side+"_estimate")], r[col(side+"_ci_low")], r[col(side+"_ci_high")]}, "|"))
			}
		}
		if r[col("in")] != analysis.InBoth {
			continue
		}
		both++
		verdict := r[col("replicated")]
		if !slices.Contains([]string{"yes", "no", "no interval"}, verdict) {
			t.Errorf("%s: replicated %q", r[col("metric")], verdict)
		}
		if verdict != "no interval" && r[col("fixed_estimate")] == "" && !strings.Contains(r[col("note")], "no combined estimate") {
			t.Errorf("%s: neither a combined estimate nor why not: %v", r[col("metric")], r)
		}
	}
	for _, db := range dbs {
		slices.Sort(headlines[db])
		slices.Sort(seen[db])
		if !slices.Equal(headlines[db], seen[db]) {
			t.Errorf("%s: compare.csv has rows\n%v\nxp analyse's headline is\n%v", db, seen[db], headlines[db])
		}
	}
	summary := regexp.MustCompile(`(\d+) of (\d+) headline rows in both campaigns replicated`).FindStringSubmatch(stdout)
	if summary == nil || summary[2] != fmt.Sprint(both) || both == 0 || !strings.Contains(stdout, "about 83% of the time") {
		t.Errorf("summary %q, want it to count the %d rows in both, with the 83%% reference", stdout, both)
	}
	t.Logf("%s", stdout)
}
