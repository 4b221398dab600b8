package export

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// TestTablesForPapers checks what a reviewer reads in tables.tex of a
// factorial campaign with negative penalties: percent columns carry no
// metric unit; negative numbers have a minus sign, not a hyphen; every
// estimate and its interval are written to the decimals the interval
// to three significant figures and its interval to the same decimals (one
// rule); the caption names the campaign, the broker and the interval
// method the rows actually used, for the ratio of means; the sensitivity
// table names factors in words with their units. The file also compiles
// (TestTablesCompile builds the same kind of campaign with pdflatex).
func TestTablesForPapers(t *testing.T) {
	dir := t.TempDir()
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 8, Levels: []string{"plaintext", "tls", "mtls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}, {Name: "acks", Levels: []string{"1", "all"}}},
		Replicates: 3, Penalty: map[string]float64{"tls": -8, "mtls": 40}})
	res := analyseInto(t, d, dir)
	b, err := os.ReadFile(filepath.Join(dir, "tables.tex"))
	if err != nil {
		t.Fatal(err)
	}
	tx := string(b)
	var rows []string
	for _, l := range strings.Split(tx, "\n") {
		if strings.HasSuffix(l, `\\`) && !strings.HasPrefix(l, "Metric") && !strings.HasPrefix(l, "Level") && !strings.HasPrefix(l, `\multicolumn`) {
			rows = append(rows, l)
		}
	}
	if len(rows) == 0 {
		t.Fatal("no table rows")
	}
	hyphen := regexp.MustCompile(`(^|[\s&\[,(])-[0-9]`)
	for _, r := range rows {
		if strings.Contains(r, "(ms)") || strings.Contains(r, `(\$\mu\$s/msg)`) || strings.Contains(r, "(msg/s)") {
			t.Errorf("a percent row labelled with the metric's unit: %s", r)
		}
		if hyphen.MatchString(r) {
			t.Errorf("a negative number with a hyphen: %s", r)
		}
	}
	if !strings.Contains(tx, "$-$") {
		t.Error("no negative number typeset with a minus sign, though tls is faster")
	}
	// Decimals follow the estimate: "est & [lo, hi]".
	num := `(?:\$-\$)?[0-9]+(?:\.([0-9]+))?`
	cell := regexp.MustCompile(`& ` + num + `(?:\\textsuperscript\{[^}]*\})? & \[` + num + `, ` + num + `\]`)
	checked := 0
	for _, r := range rows {
		m := cell.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		est := numberIn(m[0], 0)
		want := min(2, max(0, 2-int(math.Floor(math.Log10(math.Abs(est))))))
		for k, dec := range []string{m[1], m[2], m[3]} {
			// The estimate is rounded, so it may round across a power
			// of ten: allow one decimal fewer there.
			if d := len(dec) - want; d != 0 && !(d == -1 && math.Abs(math.Log10(math.Abs(est))-math.Round(math.Log10(math.Abs(est)))) < 0.01) {
				t.Errorf("%s: number %d has %d decimals, want %d for an estimate of %v", r, k, len(dec), want, est)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("no estimate with an interval found in %q", rows)
	}
	// The headline captions name the campaign, the broker (not recorded
	// in a synthetic campaign) and every method the rows used, applied
	// to the ratio of means; never a procedure no row used.
	var captions []string
	for _, tb := range strings.Split(tx, `\begin{table}`)[1:] {
		if strings.Contains(tb, `\label{tab:synthetic-headline-`) {
			c := tb[strings.Index(tb, `\caption{`):]
			captions = append(captions, c[:strings.Index(c, "\n")])
		}
	}
	if len(captions) == 0 {
		t.Fatal("no headline table labelled tab:synthetic-headline-...")
	}
	all := strings.Join(captions, "\n")
	for _, e := range res.Effects {
		if e.Statistic == analysis.StatHeadline && e.Scope == analysis.ScopeAll {
			if w := tex(methodWords(e.Method, e.Statistic)); !strings.Contains(all, w) {
				t.Errorf("captions do not name %s's method %q:\n%s", e.Metric, w, all)
			}
		}
	}
	for _, c := range captions {
		if !strings.HasPrefix(c, `\caption{Campaign synthetic, broker not recorded:`) || strings.Contains(c, "on the paired penalties") {
			t.Errorf("caption %s", c)
		}
	}
	for _, w := range []string{`\textit{Message size (bytes)}`, `\textit{Acks}`} {
		if !strings.Contains(tx, w) {
			t.Errorf("tables.tex lacks %s", w)
		}
	}
	if strings.Contains(tx, `message\_size`) {
		t.Error("the sensitivity table shows the raw factor name message_size")
	}
}

// numberIn returns the i-th number (0-based) of s, "$-$" read as minus.
func numberIn(s string, i int) float64 {
	s = strings.ReplaceAll(s, "$-$", "-")
	all := regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?`).FindAllString(s, -1)
	if i >= len(all) {
		return math.NaN()
	}
	v, _ := strconv.ParseFloat(all[i], 64)
	return v
}
