package planner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Summary describes an expansion: what was written and what was dropped.
type Summary struct {
	Campaign   string
	Seed       int64
	Replicates int
	// Combinations is the number of level combinations crossed (before
	// replicates and drops); Cells of them were kept.
	Combinations int64
	Cells        int64
	Rows         int64
	MatchedSets  int64
	// InfraGroups counts the groups rows are ordered in: combinations of
	// the infrastructure fields' levels, other than the treatment's.
	InfraGroups int64
	// Dropped counts dropped combinations by reason, most first.
	Dropped []Drop
}

// Drop is a reason combinations were dropped and how many were.
type Drop struct {
	Reason       string
	Combinations int64
}

// ErrNoRows is returned when every combination of a spec was dropped.
var ErrNoRows = errors.New("every combination was dropped; nothing to run")

// Reasons a combination is dropped besides its level ranges and exclude
// entries.
const (
	ReasonRFOverBrokers     = "replication_factor > brokers"
	ReasonISROverRF         = "min_insync_replicas > replication_factor"
	ReasonFieldEncryptBytes = "field_encrypt needs a structured encoding (json, avro, protobuf)"
	ReasonStructuredTooBig  = "structured encoding larger than message_size"
	ReasonConcurrencyOpen   = "concurrency other than 1 needs target_rate max (closed loop)"
	ReasonNoBaseline        = "matched set lost its baseline"
)

// cannotRun says why row r cannot run, or "" when it can. It checks every
// field's range, then the cross-field rules.
func cannotRun(r *Row) string {
	for i := range fields {
		f := &fields[i]
		if why := f.rangeReason(f.get(r)); why != "" {
			return why
		}
	}
	switch {
	case r.ReplicationFactor > r.Brokers:
		return ReasonRFOverBrokers
	case r.MinInsyncReplicas > r.ReplicationFactor:
		return ReasonISROverRF
	case r.Security == SecurityFieldEncrypt && MinStructuredSize[r.Encoding] == 0:
		return ReasonFieldEncryptBytes
	case MinStructuredSize[r.Encoding] > r.MessageSize:
		return ReasonStructuredTooBig
	case r.Concurrency != 1 && !r.TargetRate.IsMax():
		return ReasonConcurrencyOpen
	}
	return ""
}

// dim is one crossed factor: a field and its levels.
type dim struct {
	field  int
	levels []Value
}

// expander holds a spec compiled for expansion.
type expander struct {
	spec  *Spec
	base  Row
	set   []bool
	dims  []dim
	group []int // dims of infrastructure fields other than the treatment
	pair  []int // every other dim except the treatment
	treat int   // the treatment dim
	// baseIdx is the baseline's level index in the treatment dim.
	baseIdx int
	excl    [][]excl
	// included maps a group index to the sorted pair indexes the spec's
	// include entries name; nil when the spec has no include list.
	included map[int][]uint32
}

type excl struct {
	field int
	value Value
}

func compile(s *Spec) *expander {
	e := &expander{spec: s, set: make([]bool, len(fields)), treat: -1}
	e.base = Row{
		Campaign:  s.Campaign,
		Seed:      s.Seed,
		Treatment: s.Treatment,
	}
	for _, st := range s.Fixed {
		i := fieldIndex(st.Field)
		fields[i].set(&e.base, st.Value)
		e.set[i] = true
	}
	ti := fieldIndex(s.Treatment)
	for _, fac := range s.Factors {
		i := fieldIndex(fac.Field)
		e.set[i] = true
		d := len(e.dims)
		e.dims = append(e.dims, dim{field: i, levels: fac.Levels})
		switch {
		case i == ti:
			e.treat = d
			for j, l := range fac.Levels {
				if fields[i].equal(l, s.Baseline) {
					e.baseIdx = j
				}
			}
		case fields[i].infra:
			e.group = append(e.group, d)
		default:
			e.pair = append(e.pair, d)
		}
	}
	applyDefaults(&e.base, e.set)
	e.base.Baseline = fields[ti].format(s.Baseline)
	if len(s.Include) > 0 {
		e.included = e.includedCells()
	}
	for _, entry := range s.Exclude {
		var c []excl
		for _, st := range entry {
			c = append(c, excl{field: fieldIndex(st.Field), value: st.Value})
		}
		e.excl = append(e.excl, c)
	}
	return e
}

// includedCells enumerates the configurations the include entries name
// (crossing the factors an entry leaves out) as pair indexes per group.
func (e *expander) includedCells() map[int][]uint32 {
	seen := map[[2]int]bool{}
	out := map[int][]uint32{}
	nonTreat := append(slices.Clone(e.group), e.pair...)
	idx := make([]int, len(e.dims))
	for _, entry := range e.spec.Include {
		fixed := make([]bool, len(e.dims))
		for _, st := range entry {
			fi := fieldIndex(st.Field)
			for d := range e.dims {
				if e.dims[d].field == fi {
					fixed[d] = true
					idx[d] = slices.IndexFunc(e.dims[d].levels, func(v Value) bool { return fields[fi].equal(v, st.Value) })
				}
			}
		}
		var free []int
		for _, d := range nonTreat {
			if !fixed[d] {
				free = append(free, d)
				idx[d] = 0
			}
		}
		for {
			g, p := e.index(e.group, idx), e.index(e.pair, idx)
			if !seen[[2]int{g, p}] {
				seen[[2]int{g, p}] = true
				out[g] = append(out[g], uint32(p))
			}
			k := len(free) - 1
			for ; k >= 0; k-- {
				d := free[k]
				if idx[d]++; idx[d] < len(e.dims[d].levels) {
					break
				}
				idx[d] = 0
			}
			if k < 0 {
				break
			}
		}
	}
	for g := range out {
		slices.Sort(out[g])
	}
	return out
}

// index is the mixed-radix index (first dim slowest) of the level indexes
// idx of dims ds, the inverse of setLevels.
func (e *expander) index(ds []int, idx []int) int {
	x := 0
	for _, d := range ds {
		x = x*len(e.dims[d].levels) + idx[d]
	}
	return x
}

func (e *expander) size(ds []int) int {
	n := 1
	for _, d := range ds {
		n *= len(e.dims[d].levels)
	}
	return n
}

// setLevels sets the levels of dims ds from mixed-radix index x (the first
// dim varies slowest).
func (e *expander) setLevels(r *Row, ds []int, x int) {
	for k := len(ds) - 1; k >= 0; k-- {
		d := &e.dims[ds[k]]
		n := len(d.levels)
		fields[d.field].set(r, d.levels[x%n])
		x /= n
	}
}

// dropReason says why r is dropped, or "" to keep it.
func (e *expander) dropReason(r *Row) string {
	if why := cannotRun(r); why != "" {
		return why
	}
	for n, entry := range e.excl {
		match := true
		for _, x := range entry {
			if !fields[x.field].equal(fields[x.field].get(r), x.value) {
				match = false
				break
			}
		}
		if match {
			return fmt.Sprintf("exclude entry %d", n+1)
		}
	}
	return ""
}

// Expand writes the rows of s to w as JSONL, in execution order, and
// returns what it wrote and dropped. It streams: memory does not grow with
// the number of rows (only a 4-byte index per matched set of one block is
// kept for the shuffle). When every combination is dropped it returns the
// summary and ErrNoRows.
//
// Order: infrastructure groups (the crossed levels of platform,
// instance_type, brokers, kafka_version, gateways and gateway_kind, except
// the treatment) in spec level order; inside a group, blocks 1..replicates;
// inside a block, the group's matched sets in a seeded shuffle, and the rows
// of each matched set in a seeded shuffle, adjacent.
func Expand(s *Spec, w io.Writer) (Summary, error) {
	e := compile(s)
	sum := Summary{Campaign: s.Campaign, Seed: s.Seed, Replicates: s.Replicates}
	nG, nP, nT := e.size(e.group), e.size(e.pair), 1
	if e.treat >= 0 {
		nT = len(e.dims[e.treat].levels)
	}
	sum.Combinations = int64(nG) * int64(nP) * int64(nT)
	groups := []int(nil) // nil: every group
	if e.included != nil {
		sum.Combinations = 0
		for g, ps := range e.included {
			groups = append(groups, g)
			sum.Combinations += int64(len(ps)) * int64(nT)
		}
		slices.Sort(groups)
		nG = len(groups)
	}
	dropped := map[string]int64{}
	bw := bufio.NewWriterSize(w, 64<<10)
	var perm []uint32
	if e.included != nil {
		for _, ps := range e.included {
			if len(ps) > cap(perm) {
				perm = make([]uint32, len(ps))
			}
		}
	} else {
		perm = make([]uint32, nP)
	}
	tperm := make([]int, nT)
	set := make([]Row, nT)
	keep := make([]bool, nT)
	var line, canon []byte
	order := 0
	for gi := 0; gi < nG; gi++ {
		g := gi
		if groups != nil {
			g = groups[gi]
			perm = perm[:len(e.included[g])]
		}
		groupKept := false
		for rep := 1; rep <= s.Replicates; rep++ {
			rng := newRNG(s.Seed, uint64(g), uint64(rep))
			if groups != nil {
				copy(perm, e.included[g])
			} else {
				for i := range perm {
					perm[i] = uint32(i)
				}
			}
			rng.shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
			for _, p := range perm {
				// Build and judge every row of the matched set first: a set
				// without its baseline is dropped whole.
				kept := 0
				for t := 0; t < nT; t++ {
					r := &set[t]
					*r = e.base
					e.setLevels(r, e.group, g)
					e.setLevels(r, e.pair, int(p))
					if e.treat >= 0 {
						fields[e.dims[e.treat].field].set(r, e.dims[e.treat].levels[t])
					}
					applyDerived(r, e.set)
					why := e.dropReason(r)
					keep[t] = why == ""
					if !keep[t] {
						if rep == 1 {
							dropped[why]++
						}
					} else {
						kept++
					}
				}
				if kept > 0 && !keep[e.baselineIndex()] {
					if rep == 1 {
						dropped[ReasonNoBaseline] += int64(kept)
					}
					kept = 0
				}
				if kept == 0 {
					rng.shuffle(nT, func(int, int) {}) // keep the stream independent of drops
					continue
				}
				groupKept = true
				sum.MatchedSets++
				if rep == 1 {
					sum.Cells += int64(kept)
				}
				canon = appendCanonical(canon[:0], &set[e.baselineIndex()], fieldIndex(s.Treatment))
				pair := hash12(canon)
				for i := range tperm {
					tperm[i] = i
				}
				rng.shuffle(nT, func(i, j int) { tperm[i], tperm[j] = tperm[j], tperm[i] })
				for _, t := range tperm {
					if !keep[t] {
						continue
					}
					r := &set[t]
					canon = appendCanonical(canon[:0], r, -1)
					r.Cell = hash12(canon)
					r.Pair = pair
					r.Replicate, r.Block = rep, rep
					r.Run = RunOf(r.Cell, rep)
					order++
					r.Order = order
					line = appendRowJSON(line[:0], r)
					line = append(line, '\n')
					if _, err := bw.Write(line); err != nil {
						return sum, err
					}
					sum.Rows++
				}
			}
		}
		if groupKept {
			sum.InfraGroups++
		}
	}
	if err := bw.Flush(); err != nil {
		return sum, err
	}
	for why, n := range dropped {
		sum.Dropped = append(sum.Dropped, Drop{Reason: why, Combinations: n})
	}
	slices.SortFunc(sum.Dropped, func(a, b Drop) int {
		if a.Combinations != b.Combinations {
			return int(b.Combinations - a.Combinations)
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	if sum.Rows == 0 {
		return sum, ErrNoRows
	}
	return sum, nil
}

func (e *expander) baselineIndex() int {
	if e.treat < 0 {
		return 0
	}
	return e.baseIdx
}

// WriteText writes the summary for people, e.g. on stderr after expand.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rows (%d cells × %d replicates), %d matched sets, %d infrastructure groups, seed %d\n",
		s.Campaign, s.Rows, s.Cells, s.Replicates, s.MatchedSets, s.InfraGroups, s.Seed)
	var total int64
	for _, d := range s.Dropped {
		total += d.Combinations
	}
	if total > 0 {
		fmt.Fprintf(&b, "dropped %d of %d combinations:\n", total, s.Combinations)
		for _, d := range s.Dropped {
			fmt.Fprintf(&b, "  %8d  %s\n", d.Combinations, d.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
