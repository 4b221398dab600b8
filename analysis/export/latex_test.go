package export

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// TestTablesCompile \inputs tables.tex of two campaigns into one plain
// A4 article, one shaped like the demo's on the embedded cluster (six
// security modes), one like security-overhead's factorial on Apache Kafka
// (long factor names), builds it twice with pdflatex, and requires no
// warning (labels are unique per campaign), no overfull box, the tables'
// numbers in the PDF's text, and captions naming each campaign and its
// broker.
func TestTablesCompile(t *testing.T) {
	for _, pdf := range []string{"pdflatex", "pdftotext"} {
		if _, err := exec.LookPath(pdf); err != nil {
			t.Fatalf("%s not found: install texlive-latex-base, texlive-latex-recommended and poppler-utils (.ci/run does)", pdf)
		}
	}
	cases := []struct {
		campaign, broker, words string
		cfg                     analysis.SyntheticConfig
	}{
		{"quickstart", "kfake v1.2.3", "the embedded cluster (kfake v1.2.3)", analysis.SyntheticConfig{Seed: 2, Levels: []string{"plaintext", "tls", "mtls", "sasl_ssl", "proxy", "encrypt"},
			Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024"}}},
			Replicates: 6, Penalty: map[string]float64{"tls": 10, "mtls": 12, "sasl_ssl": 14, "proxy": 30, "encrypt": 60}}},
		{"security_overhead", "apache 4.1.0", "Apache Kafka 4.1.0", analysis.SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls", "mtls"},
			Factors: analysis.SecurityOverheadShape()[:3], Replicates: 3, Penalty: map[string]float64{"tls": -10, "mtls": 15}}},
	}
	dir := t.TempDir()
	var doc strings.Builder
	doc.WriteString("\\documentclass[a4paper]{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n\\begin{document}\n")
	var results []*analysis.Result
	for _, c := range cases {
		d := analysis.Synthetic(c.cfg)
		d.Campaign = c.campaign
		for i := range d.Runs {
			d.Runs[i].Broker = c.broker
		}
		sub := filepath.Join(dir, c.campaign)
		results = append(results, analyseInto(t, d, sub))
		fmt.Fprintf(&doc, "\\input{%s/tables.tex}\n\\clearpage\n", c.campaign)
	}
	doc.WriteString("\\end{document}\n")
	if err := os.WriteFile(filepath.Join(dir, "doc.tex"), []byte(doc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cmd := exec.Command("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pdflatex: %v\n%s", err, out)
		}
	}
	log, err := os.ReadFile(filepath.Join(dir, "doc.log"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`Overfull \\[hv]box \(([0-9.]+pt) too (wide|high)\)[^\n]*`).FindAll(log, -1); len(m) > 0 {
		t.Errorf("tables.tex does not fit an A4 article: %s", m)
	}
	if m := regexp.MustCompile(`(?i)[^\n]*warning[^\n]*`).FindAll(log, -1); len(m) > 0 {
		t.Errorf("pdflatex warns: %s", m)
	}
	txt, err := exec.Command("pdftotext", "-layout", filepath.Join(dir, "doc.pdf"), "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(txt)), " ")
	for k, c := range cases {
		if !strings.Contains(text, "Campaign "+c.campaign+", measured on "+c.words) {
			t.Errorf("no caption names campaign %s measured on %s", c.campaign, c.words)
		}
		found := 0
		for _, e := range results[k].Effects {
			if e.Scope != analysis.ScopeAll || e.Statistic != analysis.StatHeadline {
				continue
			}
			est, iv := texEstimate(e.Estimate, e.Low, e.High)
			for _, v := range []string{est, iv} {
				v = strings.ReplaceAll(strings.ReplaceAll(v, "$-$", "−"), "{,}", ",")
				if !strings.Contains(text, v) {
					t.Errorf("%s: the PDF lacks %s %s %s", c.campaign, e.Treatment, e.Metric, v)
				}
			}
			found++
		}
		if found == 0 {
			t.Errorf("%s: no headline effect", c.campaign)
		}
	}
}
