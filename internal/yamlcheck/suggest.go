package yamlcheck

import (
	"strconv"
	"strings"
)

// Suggestion returns `; did you mean "X"?` for the candidate closest to s
// (Closest), or "" when none is close: the tail of a message about an
// unknown key or value.
func Suggestion(s string, candidates []string) string {
	if c := Closest(s, candidates); c != "" {
		return "; did you mean " + strconv.Quote(c) + "?"
	}
	return ""
}

// Closest is the candidate closest to s, "" when none is close or s is
// one of them. Case, '-' and '_' are ignored first (OMB's messageSize
// finds message_size); then an edit distance of at most a third of the
// word (at least 1, at most 3) counts as close.
func Closest(s string, candidates []string) string {
	norm := func(x string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(x))
	}
	ns := norm(s)
	for _, c := range candidates {
		if norm(c) == ns && c != s {
			return c
		}
	}
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein(ns, norm(c)); d < bestD {
			best, bestD = c, d
		}
	}
	limit := min(max(len(ns)/3, 1), 3)
	if bestD <= limit && best != s {
		return best
	}
	return ""
}

// levenshtein is the edit distance between a and b, counting an adjacent
// transposition as one edit.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
