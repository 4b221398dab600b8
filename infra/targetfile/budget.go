package targetfile

import (
	"fmt"

	"github.com/xp-bench/xp/planner"
)

// BudgetError is a campaign whose estimated cost exceeds its target's
// budget_usd.
type BudgetError struct {
	EstimateUSD, BudgetUSD float64
	Target                 string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("estimated cost $%.2f exceeds budget_usd $%.2f of %s: raise the budget or run fewer rows",
		e.EstimateUSD, e.BudgetUSD, e.Target)
}

// CheckBudget estimates running rows (planner.EstimateRows with prices;
// on platform existing, the wall time at the file's hourly_price_usd) and
// returns a *BudgetError when the estimate exceeds t's budget_usd (no
// budget: never).
func CheckBudget(t *File, rows []planner.Row, prices *planner.Prices) (planner.Estimate, error) {
	est := planner.EstimateRows(rows, prices)
	if t.Existing != nil {
		est.Cost = t.Existing.HourlyPriceUSD * est.Wall.Hours()
		est.CostMax = t.Existing.HourlyPriceUSD * est.WallMax.Hours()
	}
	if t.BudgetUSD > 0 && est.Cost > t.BudgetUSD {
		return est, &BudgetError{EstimateUSD: est.Cost, BudgetUSD: t.BudgetUSD, Target: t.Path}
	}
	return est, nil
}
