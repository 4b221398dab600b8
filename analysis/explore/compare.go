package explore

import (
	"errors"
	"math"

	"github.com/xp-bench/xp/analysis"
)

// Comparison is `xp compare`'s comparison of two campaigns
// (analysis.Compare) as the compare page draws it: each headline row of
// both, side by side over the configurations they share.
type Comparison struct {
	A      int    `json:"a"`
	B      int    `json:"b"`
	LabelA string `json:"labelA"`
	LabelB string `json:"labelB"`
	// Error says why the campaigns cannot be compared, or why the
	// comparison is partial; "" when it is whole.
	Error      string          `json:"error,omitempty"`
	Shared     int             `json:"shared"`
	OnlyA      int             `json:"onlyA"`
	OnlyB      int             `json:"onlyB"`
	Confidence float64         `json:"confidence"`
	Rows       []ComparisonRow `json:"rows"`
	Notes      []string        `json:"notes"`
}

// ComparisonRow is one headline row (analysis.Replication): both
// campaigns' estimates and intervals (nil where absent), the checks
// (analysis.Capture answers: "yes", "no", "no interval", or "" for a row
// of one campaign only), the fixed- and random-effects combinations and
// the heterogeneity.
type ComparisonRow struct {
	Treatment  string    `json:"treatment"`
	Metric     string    `json:"metric"`
	Scope      string    `json:"scope"`
	In         string    `json:"in"`
	A          *Interval `json:"estA"`
	B          *Interval `json:"estB"`
	BInA       string    `json:"bInA"`
	AInB       string    `json:"aInB"`
	SignsAgree string    `json:"signsAgree"`
	Replicated string    `json:"replicated"`
	Fixed      *Interval `json:"fixed"`
	Random     *Interval `json:"random"`
	I2         *float64  `json:"i2"`
	Q          *float64  `json:"q"`
	P          *float64  `json:"p"`
	Note       string    `json:"note"`
}

// Interval is an estimate with its interval; Low and High nil when there
// is none.
type Interval struct {
	Estimate float64  `json:"est"`
	Low      *float64 `json:"low"`
	High     *float64 `json:"high"`
}

// compareCampaigns compares campaigns a and b with analysis.Compare, as
// xp compare does, with the explorer's analysis options.
func compareCampaigns(a, b *Campaign, opt analysis.Options) Comparison {
	out := Comparison{A: a.Index, B: b.Index, LabelA: a.DB, LabelB: b.DB, Rows: []ComparisonRow{}, Notes: []string{}}
	cmp, err := analysis.Compare(a.result.Dataset, b.result.Dataset, a.DB, b.DB, opt)
	if err != nil {
		out.Error = err.Error()
		if cmp == nil || !errors.Is(err, analysis.ErrNoHealthySet) {
			return out
		}
	}
	out.Shared, out.OnlyA, out.OnlyB = len(cmp.Shared), len(cmp.OnlyA), len(cmp.OnlyB)
	out.Confidence = cmp.Confidence
	out.Notes = append(out.Notes, cmp.Notes...)
	for _, r := range cmp.Rows {
		row := ComparisonRow{Treatment: r.Treatment, Metric: r.Metric, Scope: r.Scope, In: r.In,
			A: effectInterval(r.A), B: effectInterval(r.B), BInA: string(r.BInA), AInB: string(r.AInB),
			SignsAgree: string(r.SignsAgree), Replicated: string(r.Replicated),
			Fixed: metaInterval(r.Fixed), Random: metaInterval(r.Random),
			I2: finite(r.Het.I2), Q: finite(r.Het.Q), P: finite(r.Het.P), Note: r.Note}
		out.Rows = append(out.Rows, row)
	}
	return out
}

func effectInterval(e *analysis.Effect) *Interval {
	if e == nil || math.IsNaN(e.Estimate) {
		return nil
	}
	return &Interval{Estimate: e.Estimate, Low: finite(e.Low), High: finite(e.High)}
}

func metaInterval(m analysis.Meta) *Interval {
	if math.IsNaN(m.Estimate) {
		return nil
	}
	return &Interval{Estimate: m.Estimate, Low: finite(m.Low), High: finite(m.High)}
}

// finite is v, or nil for NaN or an infinity (JSON carries neither).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
