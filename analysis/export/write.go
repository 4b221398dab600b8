package export

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/xp-bench/xp/analysis"
)

// Write writes every output of res into dir (created if missing): runs.csv,
// effects.csv, sensitivity.csv, cells.csv, significance.csv, excluded.csv,
// latency.csv, percentiles.csv, telemetry.csv, tables.tex, figures/*.svg
// and report.html. A partial result (no healthy matched set) still gets
// runs.csv, excluded.csv and the report.
func Write(dir string, res *analysis.Result) error {
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		return fmt.Errorf("output directory %s: %w", dir, err)
	}
	// Figures of an earlier analysis into the same directory would mix
	// with these: figures/*.svg is ours, start it afresh.
	stale, _ := filepath.Glob(filepath.Join(dir, "figures", "*.svg"))
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	// The CSVs are written beside the rest: both only read res, and each
	// file is the same whichever finishes first. A CSV's error is
	// reported before the others', as when they were written in turn.
	csvErr := make(chan error, 1)
	go func() { csvErr <- writeCSVs(dir, res) }()
	err := writeDocuments(dir, res)
	if cerr := <-csvErr; cerr != nil {
		return cerr
	}
	return err
}

// writeDocuments writes tables.tex, figures/*.svg and report.html.
func writeDocuments(dir string, res *analysis.Result) error {
	if err := writeLaTeX(filepath.Join(dir, "tables.tex"), res); err != nil {
		return err
	}
	figs, err := figures(res)
	if err != nil {
		return fmt.Errorf("figures: %w", err)
	}
	for _, f := range figs {
		if err := os.WriteFile(filepath.Join(dir, "figures", f.Name), f.SVG, 0o644); err != nil {
			return err
		}
	}
	return writeReport(filepath.Join(dir, "report.html"), res, figs)
}
