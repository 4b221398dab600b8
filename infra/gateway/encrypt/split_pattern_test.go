package encrypt

import (
	"slices"
	"testing"
)

// The CPU benchmark sets up only the modes -test.bench selects, splitting
// the pattern into levels as the testing package does.
func TestSplitPattern(t *testing.T) {
	for pattern, want := range map[string][]string{
		"GatewayCPU":           {"GatewayCPU"},
		"GatewayCPU/^encrypt$": {"GatewayCPU", "^encrypt$"},
		"GatewayCPU/^(encrypt|field_encrypt/json)$": {"GatewayCPU", "^(encrypt|field_encrypt/json)$"},
		"GatewayCPU/field_encrypt/[a/b]":            {"GatewayCPU", "field_encrypt", "[a/b]"},
		`A\/B/C`:                                    {`A\/B`, "C"},
	} {
		if got := splitPattern(pattern); !slices.Equal(got, want) {
			t.Errorf("splitPattern(%q) = %q, want %q", pattern, got, want)
		}
	}
}
