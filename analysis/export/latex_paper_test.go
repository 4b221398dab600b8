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
// supports (its half-width to two significant figures); the caption
// spells out only the interval methods the table uses; the sensitivity
// table names factors in words with their units. The file also compiles
// (TestTablesCompile builds the same kind of campaign with pdflatex).
func TestTablesForPapers(t *testing.T) {
	dir := t.TempDir()
	d := analysis.Synthetic(analysis.SyntheticConfig{Seed: 8, Levels: []string{"plaintext", "tls", "mtls"},
		Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024", "10240"}}, {Name: "acks", Levels: []string{"1", "all"}}},
		Replicates: 3, Penalty: map[string]float64{"tls": -8, "mtls": 40}})
	analyseInto(t, d, dir)
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
	// Decimals follow the interval: "est & [lo, hi]".
	num := `(?:\$-\$)?[0-9]+(?:\.([0-9]+))?`
	cell := regexp.MustCompile(`& ` + num + ` & \[` + num + `, ` + num + `\] &`)
	checked := 0
	for _, r := range rows {
		m := cell.FindStringSubmatch(r)
		if m == nil {
			continue
		}
		lo, hi := numberIn(m[0], 1), numberIn(m[0], 2)
		half := (hi - lo) / 2
		want := max(0, 1-int(math.Floor(math.Log10(half))))
		for k, dec := range []string{m[1], m[2], m[3]} {
			// The bounds are rounded, so their half-width may round
			// across a power of ten: allow one decimal either way there.
			if d := len(dec) - want; d != 0 && !(d*d == 1 && math.Abs(math.Log10(half)-math.Round(math.Log10(half))) < 0.05) {
				t.Errorf("%s: number %d has %d decimals, want %d for an interval half %.4g wide", r, k, len(dec), want, half)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatalf("no estimate with an interval found in %q", rows)
	}
	// Each headline table's caption spells out the methods its rows use,
	// and no other.
	for _, tb := range strings.Split(tx, `\begin{table}`)[1:] {
		if !strings.Contains(tb, `\caption{Mean penalty`) {
			continue
		}
		caption := tb[strings.Index(tb, `\caption{`):]
		caption = caption[:strings.Index(caption, "\n")]
		used := map[string]bool{}
		for _, l := range strings.Split(tb, "\n") {
			if f := strings.Split(strings.TrimSuffix(l, ` \\`), " & "); len(f) == 6 && f[0] != "Metric" {
				used[f[5]] = true
			}
		}
		if len(used) == 0 {
			t.Fatalf("no rows in %s", tb)
		}
		for _, m := range methodLegendOrder {
			if strings.Contains(caption, tex(m.words)) != used[m.short] {
				t.Errorf("caption %q: explains %q %v, used %v", caption, m.words, !used[m.short], used[m.short])
			}
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
