package planner

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

const includeBase = `campaign: inc
replicates: 2
factors:
  security: [plaintext, tls, mtls]
  message_size: [100, 1024, 10240]
  partitions: [1, 16]
  brokers: [1, 3]
fixed: {acks: all, target_rate: 1000}
`

// expandRuns expands spec text and returns its rows' identities.
func expandRuns(t *testing.T, text string) ([]string, Summary) {
	t.Helper()
	s, err := ParseSpec("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	sum, err := Expand(s, &b)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := ValidatePlan(&b, "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Run+" "+r.Pair)
	}
	slices.Sort(out)
	return out, sum
}

// TestIncludeEqualsExclude: an include list gives exactly the rows (same
// runs, cells and pairs) that excluding every other combination gives.
func TestIncludeEqualsExclude(t *testing.T) {
	cases := []struct{ name, include, exclude string }{
		{"full entries", `include:
  - {message_size: 100, partitions: 1, brokers: 1}
  - {message_size: 10240, partitions: 16, brokers: 3}
`, `exclude:
  - {message_size: 1024}
  - {message_size: 100, partitions: 16}
  - {message_size: 100, brokers: 3}
  - {message_size: 10240, partitions: 1}
  - {message_size: 10240, brokers: 1}
`},
		{"partial entry crosses the rest", `include:
  - {message_size: 1024}
  - {message_size: 100, partitions: 1, brokers: 1}
  - {message_size: 1024, brokers: 3}
`, `exclude:
  - {message_size: 10240}
  - {message_size: 100, partitions: 16}
  - {message_size: 100, brokers: 3}
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inc, isum := expandRuns(t, includeBase+c.include)
			exc, _ := expandRuns(t, includeBase+c.exclude)
			if len(inc) == 0 || !slices.Equal(inc, exc) {
				t.Fatalf("include gives %d rows, exclude %d:\n%v\n%v", len(inc), len(exc), inc, exc)
			}
			if isum.Rows != int64(len(inc)) || isum.Combinations != int64(len(inc)/2) {
				t.Errorf("summary %+v for %d rows", isum, len(inc))
			}
		})
	}
}

// TestIncludeErrors: include entries name levels of non-treatment factors.
func TestIncludeErrors(t *testing.T) {
	cases := []struct{ name, include, want string }{
		{"not a list", "include: {message_size: 100}\n", "s.yaml:9: include: want a list of configurations"},
		{"empty list", "include: []\n", "s.yaml:9: include is empty and would run nothing"},
		{"empty entry", "include:\n  - {}\n", "s.yaml:10: include entry 1 is empty"},
		{"treatment", "include:\n  - {security: tls, message_size: 100}\n", "s.yaml:10: include entry 1: security is the treatment"},
		{"fixed field", "include:\n  - {acks: all}\n", "s.yaml:10: include entry 1: acks is not a factor"},
		{"not a level", "include:\n  - {message_size: 1000}\n", "s.yaml:10: include entry 1: message_size 1000 is not one of its levels (100, 1024, 10240)"},
		{"typo", "include:\n  - {mesage_size: 100}\n", `did you mean "message_size"?`},
		{"twice", "include:\n  - {message_size: 100, message_size: 1024}\n", "message_size appears twice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSpec("s.yaml", []byte(includeBase+c.include))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// TestIncludeVisitsOnlyItsCells: a spec of many wide factors and a few
// include entries expands to those entries alone (the cross product is
// 10^9 combinations; only the three named are visited).
func TestIncludeVisitsOnlyItsCells(t *testing.T) {
	spec := `campaign: wide
factors:
  security: [plaintext, tls]
  message_size: [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
  partitions: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  producers: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  consumers_per_group: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  topics: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  linger_ms: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
  batch_bytes: [16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608]
  target_rate: [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
  duration_s: [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
fixed: {brokers: 1, acks: all}
include:
  - {message_size: 100, partitions: 1, producers: 1, consumers_per_group: 1, topics: 1, linger_ms: 1, batch_bytes: 16384, target_rate: 100, duration_s: 10}
  - {message_size: 500, partitions: 6, producers: 2, consumers_per_group: 3, topics: 4, linger_ms: 5, batch_bytes: 65536, target_rate: 700, duration_s: 80}
  - {message_size: 1000, partitions: 10, producers: 10, consumers_per_group: 10, topics: 10, linger_ms: 10, batch_bytes: 8388608, target_rate: 1000, duration_s: 100}
`
	runs, sum := expandRuns(t, spec)
	if len(runs) != 6 || sum.Combinations != 6 || sum.MatchedSets != 3 {
		t.Fatalf("%d rows, summary %+v", len(runs), sum)
	}
}
