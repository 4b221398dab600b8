package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// TestTablesCompile puts tables.tex of a campaign shaped like the demo's
// (six security modes) and like security-overhead's factorial (long factor
// names) into a plain A4 article, builds it with pdflatex, and requires no
// overfull box and the tables' numbers in the PDF's text.
func TestTablesCompile(t *testing.T) {
	for _, pdf := range []string{"pdflatex", "pdftotext"} {
		if _, err := exec.LookPath(pdf); err != nil {
			t.Fatalf("%s not found: install texlive-latex-base, texlive-latex-recommended and poppler-utils (.ci/run does)", pdf)
		}
	}
	cases := []struct {
		name string
		cfg  analysis.SyntheticConfig
	}{
		{"demo", analysis.SyntheticConfig{Seed: 2, Levels: []string{"plaintext", "tls", "mtls", "sasl_ssl", "proxy", "encrypt"},
			Factors:    []analysis.SyntheticFactor{{Name: "message_size", Levels: []string{"1024"}}},
			Replicates: 6, Penalty: map[string]float64{"tls": 10, "mtls": 12, "sasl_ssl": 14, "proxy": 30, "encrypt": 60}}},
		{"factorial", analysis.SyntheticConfig{Seed: 3, Levels: []string{"plaintext", "tls", "mtls"},
			Factors: analysis.SecurityOverheadShape()[:3], Replicates: 3, Penalty: map[string]float64{"tls": 10, "mtls": 15}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			res := analyseInto(t, analysis.Synthetic(c.cfg), dir)
			doc := "\\documentclass[a4paper]{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{tables.tex}\n\\end{document}\n"
			if err := os.WriteFile(filepath.Join(dir, "doc.tex"), []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("pdflatex", "-interaction=nonstopmode", "-halt-on-error", "doc.tex")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("pdflatex: %v\n%s", err, out)
			}
			log, err := os.ReadFile(filepath.Join(dir, "doc.log"))
			if err != nil {
				t.Fatal(err)
			}
			if m := regexp.MustCompile(`Overfull \\[hv]box \(([0-9.]+pt) too (wide|high)\)[^\n]*`).FindAll(log, -1); len(m) > 0 {
				t.Errorf("tables.tex does not fit an A4 article: %s", m)
			}
			txt, err := exec.Command("pdftotext", "-layout", filepath.Join(dir, "doc.pdf"), "-").Output()
			if err != nil {
				t.Fatal(err)
			}
			text := string(txt)
			found := 0
			for _, e := range res.Effects {
				if e.Scope != analysis.ScopeAll || e.Statistic != analysis.StatHeadline {
					continue
				}
				est, iv := texEstimate(e.Estimate, e.Low, e.High)
				for _, v := range []string{est, iv} {
					v = strings.ReplaceAll(v, "$-$", "−")
					if !strings.Contains(text, v) {
						t.Errorf("the PDF lacks %s %s %s", e.Treatment, e.Metric, v)
					}
				}
				found++
			}
			if found == 0 || !strings.Contains(text, "Publish latency p99") {
				t.Errorf("the PDF has no headline table:\n%s", text)
			}
		})
	}
}
