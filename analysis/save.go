package analysis

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/xp-bench/xp/results"
)

// SaveOptions describe the campaign record Save writes.
type SaveOptions struct {
	// Spec is stored as the campaign spec (for imports: {"import": ...}).
	Spec string
	// Target is recorded as the campaign target; default "import".
	Target    string
	XPVersion string
	// Created is the registration time; default: now.
	Created time.Time
}

// ErrDatabaseExists: Save writes new databases only; it refuses a path
// where a file (a campaign or anything else) already exists.
var ErrDatabaseExists = errors.New("file already exists; import writes a new campaign database")

// Save writes a Dataset as a new campaign database through the evidence
// store: one plan row per run (identity, treatment, baseline, factors) and
// every attempt with its metrics and whole-run histograms. It is how `xp
// import` stores outside evidence, and how tests and benchmarks build
// campaigns.
//
// Save is all or nothing: it writes a temporary database beside path and
// moves it to path only when complete, so a failure leaves no database at
// path (or the empty file that was there), and no -wal or -shm file.
func Save(ctx context.Context, path string, d *Dataset, o SaveOptions) error {
	if fi, err := os.Stat(path); err == nil && (fi.IsDir() || fi.Size() > 0) {
		return fmt.Errorf("%s: %w: give a new --db file", path, ErrDatabaseExists)
	}
	for i := range d.Runs {
		for name, v := range d.Runs[i].Metrics {
			if !finite(v) {
				return fmt.Errorf("%s: run %s: metric %s is %v: only finite numbers are stored", path, d.Runs[i].Run, name, v)
			}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".saving-*")
	if err != nil {
		return fmt.Errorf("cannot write campaign database %s: %w", path, err)
	}
	tmp.Close()
	defer removeDatabase(tmp.Name()) // after the move there is nothing left to remove
	if err := save(ctx, tmp.Name(), d, o); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 && !fi.IsDir() {
		return os.Rename(tmp.Name(), path)
	}
	// Link, not rename: a file that appeared at path meanwhile is kept.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s: %w: give a new --db file", path, ErrDatabaseExists)
		}
		return fmt.Errorf("cannot write campaign database %s: %w", path, err)
	}
	return nil
}

// removeDatabase removes a database file and the files SQLite and the
// writer lock keep beside it.
func removeDatabase(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal", ".lock"} {
		os.Remove(path + suffix)
	}
}

func save(ctx context.Context, path string, d *Dataset, o SaveOptions) error {
	st, err := results.Open(ctx, path)
	if err != nil {
		return err
	}
	defer st.Close()
	var plan bytes.Buffer
	var rows []results.Row
	seen := map[string]bool{}
	order := 0
	for i := range d.Runs {
		r := &d.Runs[i]
		if seen[r.Run] {
			continue
		}
		seen[r.Run] = true
		order++
		obj := planObject(d, r)
		plan.Write(obj)
		plan.WriteByte('\n')
		rows = append(rows, results.Row{Run: r.Run, Order: order, Cell: r.Cell, Pair: r.Pair,
			Replicate: r.Replicate, Block: r.Replicate, Plan: obj})
	}
	if o.Target == "" {
		o.Target = "import"
	}
	c := results.Campaign{Name: d.Campaign, Spec: o.Spec, Plan: plan.Bytes(), Target: o.Target, Seed: d.Seed,
		XPVersion: o.XPVersion, Created: o.Created}
	created, err := st.Register(ctx, c, rows)
	if err != nil {
		return err
	}
	if !created {
		return ErrDatabaseExists
	}
	started := o.Created
	if started.IsZero() {
		started = time.Now()
	}
	var atts []results.NewAttempt
	for i := range d.Runs {
		r := &d.Runs[i]
		if r.Attempt == 0 {
			continue
		}
		ev := results.Evidence{Outcome: results.Outcome(r.Outcome), Reasons: r.Reasons, Error: r.Error,
			Metrics: r.Metrics, Ended: started}
		for _, p := range r.Series {
			ev.Series = append(ev.Series, results.SeriesPoint{Second: p.Second, Published: p.Published, Consumed: p.Consumed, Backlog: p.Backlog})
		}
		kinds := make([]string, 0, len(r.Histograms))
		for k := range r.Histograms {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			ev.Histograms = append(ev.Histograms, results.Histogram{Kind: k, Second: results.WholeRun, Data: r.Histograms[k]})
		}
		atts = append(atts, results.NewAttempt{Run: r.Run, Started: started, Evidence: ev})
	}
	if _, err := st.RecordAttempts(ctx, atts); err != nil {
		return fmt.Errorf("record attempts: %w", err)
	}
	return st.Close()
}

// planObject writes a run's plan row as a JSON object with identity fields
// first, then the factors in dataset order.
func planObject(d *Dataset, r *Run) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	put := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(v)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	put("campaign", d.Campaign)
	put("run", r.Run)
	put("cell", r.Cell)
	put("pair", r.Pair)
	put("replicate", r.Replicate)
	put("treatment", d.Treatment)
	put("baseline", d.Baseline)
	for i, f := range d.Factors {
		if i < len(r.Factors) {
			put(f, r.Factors[i])
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// identity is the first 12 hex digits of the SHA-256 of the canonical JSON
// of fields (sorted keys), like the planner's cell and pair.
func identity(fields map[string]string) string {
	b, _ := json.Marshal(fields) // encoding/json sorts map keys
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:12]
}
