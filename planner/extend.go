package planner

import (
	"slices"
	"strings"
)

// stageStream keeps the streams of appended replicates apart from the
// plan's own (newRNG's group argument).
const stageStream = 1 << 32

// Extend returns the rows that take each configuration (pair) of a
// campaign to total[pair] replicates: new matched sets, replicates after
// the pair's last, each a copy of the pair's first matched set with the
// replicate, block and run of its place. Their order continues after
// the campaign's last row, in the plan's design: infrastructure group by
// group (in the order the groups first run), replicate by replicate (a
// block), the configurations of a block in a seeded random order and the
// treatment levels of each matched set shuffled, the set's rows adjacent.
// The same rows and seed give the same rows. Pairs not in total, or
// already at their total, get none.
func Extend(rows []Row, total map[string]int) []Row {
	if len(rows) == 0 {
		return nil
	}
	sorted := slices.Clone(rows)
	slices.SortFunc(sorted, func(a, b Row) int { return a.Order - b.Order })
	last := sorted[len(sorted)-1].Order
	seed := sorted[0].Seed
	have := map[string]int{}
	first := map[string][]Row{} // pair -> rows of its first replicate
	firstRep := map[string]int{}
	var groups []InfraKey
	groupOf := map[string]int{}
	seenGroup := map[InfraKey]int{}
	for _, r := range sorted {
		have[r.Pair] = max(have[r.Pair], r.Replicate)
		if fr, ok := firstRep[r.Pair]; !ok || r.Replicate < fr {
			firstRep[r.Pair] = r.Replicate
			first[r.Pair] = nil
		}
		if r.Replicate == firstRep[r.Pair] {
			first[r.Pair] = append(first[r.Pair], r)
		}
		k := r.InfraKey()
		g, ok := seenGroup[k]
		if !ok {
			g = len(groups)
			seenGroup[k] = g
			groups = append(groups, k)
		}
		if _, ok := groupOf[r.Pair]; !ok {
			groupOf[r.Pair] = g
		}
	}
	var out []Row
	order := last
	for g := range groups {
		var pairs []string
		top := 0
		for p, n := range total {
			if gi, ok := groupOf[p]; ok && gi == g && n > have[p] {
				pairs = append(pairs, p)
				top = max(top, n)
			}
		}
		slices.Sort(pairs)
		for rep := 1; rep <= top; rep++ {
			var block []string
			for _, p := range pairs {
				if rep > have[p] && rep <= total[p] {
					block = append(block, p)
				}
			}
			if len(block) == 0 {
				continue
			}
			rng := newRNG(seed, stageStream+uint64(g), uint64(rep))
			rng.shuffle(len(block), func(i, j int) { block[i], block[j] = block[j], block[i] })
			for _, p := range block {
				set := slices.Clone(first[p])
				slices.SortFunc(set, func(a, b Row) int { return strings.Compare(a.Cell, b.Cell) })
				rng.shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
				for _, r := range set {
					order++
					r.Replicate, r.Block, r.Order = rep, rep, order
					r.Run = RunOf(r.Cell, rep)
					out = append(out, r)
				}
			}
		}
	}
	return out
}
