package planner

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/golden"
)

// TestReadyPlans re-expands every spec in plans/ and fails when the
// committed campaign beside it differs (go test ./planner -run ReadyPlans
// -update rewrites them). Each committed campaign must also validate.
func TestReadyPlans(t *testing.T) {
	specs, err := filepath.Glob("../plans/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"quickstart": 42, "security-overhead": 5184}
	n := 0
	for _, path := range specs {
		if filepath.Base(path) == "prices.yaml" {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			s, err := ReadSpec(path)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			sum, err := Expand(s, &b)
			if err != nil {
				t.Fatal(err)
			}
			if w, ok := want[name]; ok && sum.Rows != w {
				t.Errorf("%d rows, want %d", sum.Rows, w)
			}
			plan := strings.TrimSuffix(path, ".yaml") + ".jsonl"
			golden.CheckFile(t, plan, b.Bytes())
			if _, err := ReadPlan(plan); err != nil {
				t.Errorf("committed plan does not validate: %v", err)
			}
		})
	}
	if n < 5 {
		t.Errorf("%d ready specs in plans/, want at least 5", n)
	}
}
