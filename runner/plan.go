package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// plan is a read and validated campaign file.
type plan struct {
	path  string
	bytes []byte
	// rows in execution order.
	rows []planner.Row
}

// readPlan reads and validates a JSONL campaign with the same checks as
// `xp plan validate`. Errors are bad input and name FILE:LINE.
func readPlan(path string) (*plan, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("plan %s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	rows, err := planner.ValidatePlan(bytes.NewReader(b), path)
	if err != nil {
		var pe planner.PlanErrors
		if errors.As(err, &pe) {
			const show = 20
			if len(pe) > show {
				return nil, fmt.Errorf("plan %s is not valid (%d problems, first %d; see xp plan validate):\n%w",
					path, len(pe), show, pe[:show])
			}
			return nil, fmt.Errorf("plan %s is not valid:\n%w", path, err)
		}
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return &plan{path: path, bytes: b, rows: rows}, nil
}

// storeRows turns the plan into evidence-store rows; each row's JSON is the
// planner's row with every field filled in.
func (p *plan) storeRows() []results.Row {
	out := make([]results.Row, len(p.rows))
	for i := range p.rows {
		r := &p.rows[i]
		j, _ := json.Marshal(r)
		out[i] = results.Row{Run: r.Run, Order: r.Order, Cell: r.Cell, Pair: r.Pair,
			Replicate: r.Replicate, Block: r.Block, Plan: j}
	}
	return out
}

// rowSeed is the seed of a row's own random choices (payloads): the
// campaign seed mixed with the run id (FNV-1a), so that re-running a row
// reproduces it.
func rowSeed(r *planner.Row) int64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for i := 0; i < 8; i++ {
		mix(byte(uint64(r.Seed) >> (8 * i)))
	}
	for i := 0; i < len(r.Run); i++ {
		mix(r.Run[i])
	}
	return int64(h &^ (1 << 63))
}

// specFor returns the factor spec text the plan was expanded from, to be
// kept with the campaign: specPath when given (it must reproduce the plan
// byte for byte, with the plan's seed), else a spec beside the plan with
// its name and .yaml when that reproduces it, else "".
func specFor(p *plan, specPath string) (string, error) {
	if specPath != "" {
		text, err := os.ReadFile(specPath)
		if err != nil {
			return "", fmt.Errorf("--spec: %w", err)
		}
		if err := reproduces(p, specPath, text); err != nil {
			return "", fmt.Errorf("--spec %s: %w", specPath, err)
		}
		return string(text), nil
	}
	sibling := strings.TrimSuffix(p.path, filepath.Ext(p.path)) + ".yaml"
	text, err := os.ReadFile(sibling)
	if err != nil || reproduces(p, sibling, text) != nil {
		return "", nil
	}
	return string(text), nil
}

// reproduces checks that spec expands to exactly the plan's bytes.
func reproduces(p *plan, name string, text []byte) error {
	s, err := planner.ParseSpec(name, text)
	if err != nil {
		return err
	}
	s.Seed = p.rows[0].Seed // xp plan expand --seed overrides the spec's
	var buf bytes.Buffer
	if _, err := planner.Expand(s, &buf); err != nil {
		return err
	}
	if !bytes.Equal(buf.Bytes(), p.bytes) {
		return fmt.Errorf("does not expand to the plan %s (was the spec or the plan edited?)", p.path)
	}
	return nil
}
