package export

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// The record layer and cipher each attempt's gateway ran are columns of
// runs.csv and of the report's run table; rows without a gateway leave
// them empty.
func TestRunsShowGatewayCrypto(t *testing.T) {
	d := testDataset()
	for i := range d.Runs {
		switch d.Level(&d.Runs[i], "security") {
		case "tls":
			d.Runs[i].GatewayRecordLayer, d.Runs[i].GatewayCipher = "crypto/tls", "crypto/cipher"
		case "mtls":
			d.Runs[i].GatewayRecordLayer, d.Runs[i].GatewayCipher = "tlsrec", "aesgcm-vaes"
		}
	}
	dir := t.TempDir()
	analyseInto(t, d, dir)
	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	rl, ci, sec := slices.Index(runs[0], "gateway_record_layer"), slices.Index(runs[0], "gateway_cipher"), slices.Index(runs[0], "security")
	if rl < 0 || ci < 0 || sec < 0 {
		t.Fatalf("runs.csv header %v lacks gateway_record_layer, gateway_cipher or security", runs[0])
	}
	want := map[string][2]string{"plaintext": {"", ""}, "tls": {"crypto/tls", "crypto/cipher"}, "mtls": {"tlsrec", "aesgcm-vaes"}}
	for _, r := range runs[1:] {
		if w := want[r[sec]]; r[rl] != w[0] || r[ci] != w[1] {
			t.Errorf("%s run: record layer %q cipher %q, want %q %q", r[sec], r[rl], r[ci], w[0], w[1])
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<th>gateway crypto</th>", "tlsrec + aesgcm-vaes", "crypto/tls + crypto/cipher"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// A run whose gateway legs crypto/tls kept instead of tlsrec says so in
// runs.csv (gateway_tls_kept, record layer tlsrec+crypto/tls), in the
// note of every effect whose matched sets hold it, and in the report's
// notes and run table; a run whose legs were not counted says that.
func TestRunsShowGatewayTLSKept(t *testing.T) {
	d := testDataset()
	// The mtls run of a healthy matched set, and another mtls run.
	var kept, uncounted *analysis.Run
	healthy := map[[2]any]int{}
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Final && r.Outcome == analysis.OutcomeDone && d.Level(r, "security") != "tls" {
			healthy[[2]any{r.Pair, r.Replicate}]++
		}
	}
	for i := range d.Runs {
		r := &d.Runs[i]
		if d.Level(r, "security") != "mtls" || !r.Final {
			continue
		}
		r.GatewayRecordLayer, r.GatewayCipher = "tlsrec", "aesgcm-vaes"
		switch {
		case kept == nil && healthy[[2]any{r.Pair, r.Replicate}] == 2:
			kept = r
			r.GatewayRecordLayer, r.GatewayTLSKept = "tlsrec+crypto/tls", "client:not_tls13_aesgcm=2;upstream:untested_go=1"
		case uncounted == nil && r.Outcome == analysis.OutcomeDone:
			uncounted = r
			r.GatewayTLSKept = analysis.TLSKeptNotCounted
		}
	}
	if kept == nil || uncounted == nil {
		t.Fatal("the synthetic campaign has no healthy mtls set")
	}
	dir := t.TempDir()
	res := analyseInto(t, d, dir)

	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	run, rl, kc := slices.Index(runs[0], "run"), slices.Index(runs[0], "gateway_record_layer"), slices.Index(runs[0], "gateway_tls_kept")
	if kc != rl+2 {
		t.Fatalf("runs.csv header %v: want gateway_tls_kept after gateway_record_layer and gateway_cipher", runs[0])
	}
	for _, r := range runs[1:] {
		want := [2]string{"", ""}
		switch r[run] {
		case kept.Run:
			want = [2]string{"tlsrec+crypto/tls", "client:not_tls13_aesgcm=2;upstream:untested_go=1"}
		case uncounted.Run:
			want = [2]string{"tlsrec", "not counted"}
		default:
			if r[rl] != "" {
				want[0] = "tlsrec"
			}
		}
		if got := [2]string{r[rl], r[kc]}; got != want {
			t.Errorf("runs.csv %s: record layer, tls kept %q, want %q", r[run], got, want)
		}
	}

	healthySets := 0
	for _, c := range res.Counts {
		if c.Treatment == "mtls" {
			healthySets = c.Healthy
		}
	}
	pairSets := 0
	for _, c := range res.Cells {
		if c.Pair == kept.Pair {
			pairSets = c.Healthy[slices.Index(res.Treatments, "mtls")]
		}
	}
	note := func(n int) string {
		return fmt.Sprintf("1 of the %d healthy matched sets hold a run whose gateway TLS legs crypto/tls carried in part instead of tlsrec (runs.csv gateway_tls_kept)", n)
	}
	eff := readCSV(t, filepath.Join(dir, "effects.csv"))
	noted := map[string]int{}
	for _, r := range eff[1:] {
		tr, scope, n := r[0], r[3], r[13]
		has := strings.Contains(n, "gateway TLS legs")
		want := ""
		switch {
		case tr == "mtls" && scope == kept.Pair:
			want = note(pairSets)
		case tr == "mtls" && scope == analysis.ScopeAll:
			want = note(healthySets)
		}
		switch {
		case want == "" && has:
			t.Errorf("effects.csv %s %s %s: note %q, want none about kept legs", tr, scope, r[2], n)
		case want != "" && !strings.HasSuffix(n, want):
			t.Errorf("effects.csv %s %s %s: note %q, want it to end %q", tr, scope, r[2], n, want)
		case want != "":
			noted[scope]++
		}
	}
	if noted[kept.Pair] == 0 || noted[analysis.ScopeAll] == 0 {
		t.Errorf("effects noted about kept legs per scope: %v; want the pair %s and all", noted, kept.Pair)
	}

	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"tlsrec+crypto/tls + aesgcm-vaes (legs kept on crypto/tls: client:not_tls13_aesgcm=2;upstream:untested_go=1)",
		"tlsrec + aesgcm-vaes (legs kept on crypto/tls not counted)",
		"gateway_crypto fast: in 1 run(s) crypto/tls, not tlsrec, carried some of the gateway&#39;s TLS legs (leg:reason=legs): " +
			kept.Run + " (client:not_tls13_aesgcm=2;upstream:untested_go=1). They stay in their matched sets",
		"were not counted in 1 run(s) (this target cannot count them, or reading the gateway&#39;s counters failed): " + uncounted.Run + ".",
	} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// An attempt whose telemetry covers less than its measured window says so
// in runs.csv (telemetry_gaps) and in the report's run table.
func TestRunsShowTelemetryGaps(t *testing.T) {
	d := testDataset()
	d.Runs[0].TelemetryGaps = "client-0 12.0 s of 30.0 s"
	dir := t.TempDir()
	analyseInto(t, d, dir)
	runs := readCSV(t, filepath.Join(dir, "runs.csv"))
	run, gaps := slices.Index(runs[0], "run"), slices.Index(runs[0], "telemetry_gaps")
	if gaps < 0 {
		t.Fatalf("runs.csv header %v lacks telemetry_gaps", runs[0])
	}
	for _, r := range runs[1:] {
		want := ""
		if r[run] == d.Runs[0].Run && r[slices.Index(runs[0], "attempt")] == fmt.Sprint(d.Runs[0].Attempt) {
			want = "client-0 12.0 s of 30.0 s"
		}
		if r[gaps] != want {
			t.Errorf("runs.csv %s: telemetry_gaps %q, want %q", r[run], r[gaps], want)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "telemetry covers less than the measured window: missing client-0 12.0 s of 30.0 s") {
		t.Error("report.html does not say which run's telemetry has a gap")
	}
}
