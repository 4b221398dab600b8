package explore

import (
	"math"
	"strings"

	"github.com/xp-bench/xp/analysis"
)

// Comparison sets two campaigns side by side on the headline statistic
// (the ratio-of-means penalty) for every row they share: the pooled
// scopes and each matched configuration (pair) both campaigns hold.
type Comparison struct {
	A    int             `json:"a"`
	B    int             `json:"b"`
	Rows []ComparisonRow `json:"rows"`
}

// ComparisonRow is one shared row. AInB says A's estimate lies inside B's
// interval, BInA the converse; SameSign that both estimates have the same
// sign (a zero counts as agreeing with either). A check without both
// intervals is nil.
type ComparisonRow struct {
	Treatment string   `json:"treatment"`
	Metric    string   `json:"metric"`
	Scope     string   `json:"scope"`
	Settings  string   `json:"settings,omitempty"`
	EstA      float64  `json:"estA"`
	LowA      *float64 `json:"lowA"`
	HighA     *float64 `json:"highA"`
	EstB      float64  `json:"estB"`
	LowB      *float64 `json:"lowB"`
	HighB     *float64 `json:"highB"`
	AInB      *bool    `json:"aInB"`
	BInA      *bool    `json:"bInA"`
	SameSign  bool     `json:"sameSign"`
	Agree     bool     `json:"agree"`
}

// Compare returns the rows a and b share, in a's order. Agree is true when
// both estimates lie in the other's interval and their signs agree.
func Compare(a, b *Campaign) Comparison {
	out := Comparison{A: a.Index, B: b.Index}
	type key struct{ tr, metric, scope string }
	inB := map[key][]any{}
	for _, e := range b.Effects {
		if e[5] == analysis.StatRatioPenalty {
			inB[key{e[0].(string), e[2].(string), e[3].(string)}] = e
		}
	}
	settings := map[string]string{}
	for _, c := range a.Cells {
		var parts []string
		for i, f := range a.CellFactors {
			if i < len(c.Levels) {
				parts = append(parts, f+"="+c.Levels[i])
			}
		}
		settings[c.Pair] = strings.Join(parts, " ")
	}
	for _, e := range a.Effects {
		if e[5] != analysis.StatRatioPenalty {
			continue
		}
		k := key{e[0].(string), e[2].(string), e[3].(string)}
		f, ok := inB[k]
		if !ok {
			continue
		}
		ea, okA := e[7].(float64)
		eb, okB := f[7].(float64)
		if !okA || !okB {
			continue
		}
		r := ComparisonRow{Treatment: k.tr, Metric: k.metric, Scope: k.scope, Settings: settings[k.scope],
			EstA: ea, LowA: numPtr(e[8]), HighA: numPtr(e[9]), EstB: eb, LowB: numPtr(f[8]), HighB: numPtr(f[9])}
		r.AInB = inside(ea, r.LowB, r.HighB)
		r.BInA = inside(eb, r.LowA, r.HighA)
		r.SameSign = ea == 0 || eb == 0 || math.Signbit(ea) == math.Signbit(eb)
		r.Agree = r.SameSign && r.AInB != nil && *r.AInB && r.BInA != nil && *r.BInA
		out.Rows = append(out.Rows, r)
	}
	return out
}

func numPtr(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

// inside says whether v lies in [lo, hi]; nil without an interval.
func inside(v float64, lo, hi *float64) *bool {
	if lo == nil || hi == nil {
		return nil
	}
	in := v >= *lo && v <= *hi
	return &in
}
