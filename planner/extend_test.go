package planner

import (
	"bytes"
	"slices"
	"testing"
)

// TestExtend appends replicates to some configurations of an expanded
// plan: only those pairs get rows, replicates continue after the plan's,
// each new matched set holds every level of its pair with adjacent
// orders after the plan's last, the blocks are shuffled (not in pair
// order every time), and the result is the same twice.
func TestExtend(t *testing.T) {
	s, err := ParseSpec("s.yaml", []byte(`campaign: ext
seed: 9
replicates: 2
treatment: security
factors:
  security: [plaintext, tls, mtls]
  message_size: [1024, 2048, 4096, 8192, 16384, 32768]
fixed:
  brokers: 1
  acks: "1"
  target_rate: 1000
`))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Expand(s, &buf); err != nil {
		t.Fatal(err)
	}
	rows, err := ValidatePlan(&buf, "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for _, r := range rows {
		if !slices.Contains(pairs, r.Pair) {
			pairs = append(pairs, r.Pair)
		}
	}
	total := map[string]int{pairs[0]: 2, pairs[1]: 5, pairs[2]: 4, pairs[3]: 5, pairs[4]: 5}
	ext := Extend(rows, total)
	if again := Extend(rows, total); !slices.EqualFunc(ext, again, func(a, b Row) bool { return a.Run == b.Run && a.Order == b.Order }) {
		t.Fatal("Extend is not deterministic")
	}
	want := 3 * (0 + 3 + 2 + 3 + 3)
	if len(ext) != want {
		t.Fatalf("%d rows, want %d", len(ext), want)
	}
	type key struct {
		pair string
		rep  int
	}
	sets := map[key][]Row{}
	var blockOrder [][]string
	for i, r := range ext {
		if r.Order != len(rows)+1+i {
			t.Fatalf("row %d order %d, want %d", i, r.Order, len(rows)+1+i)
		}
		if r.Replicate <= 2 || r.Replicate > total[r.Pair] || r.Block != r.Replicate || r.Run != RunOf(r.Cell, r.Replicate) {
			t.Errorf("row %+v", r)
		}
		k := key{r.Pair, r.Replicate}
		if len(sets[k]) > 0 && sets[k][len(sets[k])-1].Order != r.Order-1 {
			t.Errorf("matched set %v not adjacent", k)
		}
		sets[k] = append(sets[k], r)
		if i == 0 || ext[i-1].Replicate != r.Replicate {
			blockOrder = append(blockOrder, nil)
		}
		if b := &blockOrder[len(blockOrder)-1]; len(*b) == 0 || (*b)[len(*b)-1] != r.Pair {
			*b = append(*b, r.Pair)
		}
	}
	for k, set := range sets {
		var levels []string
		for _, r := range set {
			levels = append(levels, r.Security)
		}
		slices.Sort(levels)
		if !slices.Equal(levels, []string{"mtls", "plaintext", "tls"}) {
			t.Errorf("matched set %v has levels %v", k, levels)
		}
	}
	shuffled := false
	for _, b := range blockOrder {
		shuffled = shuffled || !slices.IsSorted(b)
	}
	if !shuffled {
		t.Errorf("every block in pair order: %v", blockOrder)
	}
}
