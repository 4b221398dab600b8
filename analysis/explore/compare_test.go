package explore

import (
	"math"
	"strings"
	"testing"

	"github.com/xp-bench/xp/analysis"
)

// TestCompareCampaigns: the compare page carries xp compare's comparison
// (analysis.Compare) row for row, and says why when there is none.
func TestCompareCampaigns(t *testing.T) {
	opt := analysis.Options{Resamples: 200}
	campaign := func(i int, d *analysis.Dataset, created string) *Campaign {
		d.Info = append(d.Info, analysis.Field{Name: "created", Value: created})
		return &Campaign{Index: i, DB: d.Campaign + ".db", result: &analysis.Result{Dataset: d}}
	}
	a := campaign(0, analysis.Synthetic(demoShape(1)), "2026-12-01 09:00:00 UTC")
	b := campaign(1, analysis.Synthetic(demoShape(2)), "2026-12-02 09:00:00 UTC")
	want, err := analysis.Compare(a.result.Dataset, b.result.Dataset, a.DB, b.DB, opt)
	if err != nil {
		t.Fatal(err)
	}
	got := compareCampaigns(a, b, opt)
	if got.Error != "" || got.A != 0 || got.B != 1 || got.Shared != len(want.Shared) || len(got.Rows) != len(want.Rows) || len(got.Rows) == 0 {
		t.Fatalf("comparison %+v, want %d rows over %d configurations", got, len(want.Rows), len(want.Shared))
	}
	for i, w := range want.Rows {
		g := got.Rows[i]
		if g.Treatment != w.Treatment || g.Metric != w.Metric || g.Scope != w.Scope || g.In != w.In ||
			g.BInA != string(w.BInA) || g.AInB != string(w.AInB) || g.SignsAgree != string(w.SignsAgree) || g.Replicated != string(w.Replicated) {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
		if g.A == nil || g.A.Estimate != w.A.Estimate || g.B == nil || g.B.Estimate != w.B.Estimate {
			t.Errorf("row %d: estimates %+v %+v, want %v %v", i, g.A, g.B, w.A.Estimate, w.B.Estimate)
		}
		if !math.IsNaN(w.Fixed.Estimate) && (g.Fixed == nil || g.Fixed.Estimate != w.Fixed.Estimate) {
			t.Errorf("row %d: fixed-effect estimate %+v, want %v", i, g.Fixed, w.Fixed.Estimate)
		}
	}

	same := compareCampaigns(a, campaign(2, analysis.Synthetic(demoShape(1)), "2026-12-01 09:00:00 UTC"), opt)
	if !strings.Contains(same.Error, "same campaign") || len(same.Rows) != 0 {
		t.Errorf("one campaign twice: %+v, want refused as the same campaign", same)
	}
}
