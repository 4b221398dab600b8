package planner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSpec: the spec parser never panics, and every spec it accepts
// (small enough to expand here) expands into a plan that validates, with
// WriteSpec round-tripping it. Seeds: testdata/fuzz/FuzzParseSpec and the
// ready plans.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte(exampleSpec))
	specs, _ := filepath.Glob("../plans/*.yaml")
	for _, p := range specs {
		if data, err := os.ReadFile(p); err == nil && !strings.HasSuffix(p, "prices.yaml") {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec("f.yaml", data)
		if err != nil {
			var se SpecErrors
			if !errors.As(err, &se) || len(se) == 0 {
				t.Fatalf("error %v is not SpecErrors", err)
			}
			return
		}
		if s.rowsBeforeExclusion() > 2000 {
			return
		}
		var w strings.Builder
		if err := WriteSpec(&w, s); err != nil {
			t.Fatal(err)
		}
		s2, err := ParseSpec("w.yaml", []byte(w.String()))
		if err != nil || !specEqual(s, s2) {
			t.Fatalf("WriteSpec round trip: %v\n%s", err, w.String())
		}
		var b bytes.Buffer
		sum, err := Expand(s, &b)
		if errors.Is(err, ErrNoRows) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		rows, err := ValidatePlan(&b, "f.jsonl")
		if err != nil {
			t.Fatalf("expansion does not validate: %v", err)
		}
		if int64(len(rows)) != sum.Rows {
			t.Fatalf("%d rows read, %d written", len(rows), sum.Rows)
		}
	})
}
