package planner

import (
	"cmp"
	"slices"
)

// GroupByInfra splits rows into the runs of rows that share infrastructure
// (InfraKey): rows sorted by Order (stable, so rows of one Order keep
// their place), groups in the order of their first row. Every group's
// rows share one InfraKey; rows is left as it was.
func GroupByInfra(rows []Row) [][]Row {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b Row) int { return cmp.Compare(a.Order, b.Order) })
	at := map[InfraKey]int{}
	var out [][]Row
	for _, r := range sorted {
		k := r.InfraKey()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}
