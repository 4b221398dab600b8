package planner

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Overview is what `xp plan show` prints: the campaign's factors and
// levels, its size, infrastructure groups, and estimated wall time and cost.
type Overview struct {
	Campaign    string         `json:"campaign"`
	Seed        int64          `json:"seed"`
	Treatment   string         `json:"treatment"`
	Baseline    string         `json:"baseline"`
	Factors     []FactorLevels `json:"factors"`
	Fixed       []FieldValue   `json:"fixed"`
	Rows        int            `json:"rows"`
	Cells       int            `json:"cells"`
	Replicates  int            `json:"replicates"`
	MatchedSets int            `json:"matched_sets"`
	// Absent counts combinations of the levels present that have no cell
	// (excluded or impossible); Dropped names the reasons, known only when
	// the overview was made from the spec.
	Absent   int64        `json:"absent_combinations"`
	Dropped  []Drop       `json:"dropped,omitempty"`
	Groups   []GroupRows  `json:"infra_groups"`
	Estimate EstimateJSON `json:"estimate"`
	// Percentiles say which latency percentiles (p99, p99.9, p99.99) the
	// runs' length supports, per rate and duration.
	Percentiles []string `json:"percentiles"`
	// Warnings name rows whose rate and duration cannot support a latency
	// percentile the analysis reports.
	Warnings []string `json:"warnings,omitempty"`
	// WorstCase is what a two-stage design with at most MaxReplicates
	// replicates costs if every configuration needs them all (AddWorstCase).
	WorstCase *WorstCase `json:"two_stage_worst_case,omitempty"`
}

// WorstCase is a two-stage design's largest campaign: every
// configuration at its most replicates.
type WorstCase struct {
	MaxReplicates int          `json:"max_replicates"`
	Rows          int          `json:"rows"`
	Estimate      EstimateJSON `json:"estimate"`
}

// AddWorstCase adds the worst case of a two-stage design run on rows with
// at most maxReplicates replicates a configuration (xp run --halfwidth
// --max-replicates): the plan plus every second-stage row Extend could
// append, estimated like the plan.
func (o *Overview) AddWorstCase(rows []Row, maxReplicates int, prices *Prices) {
	total := map[string]int{}
	for _, r := range rows {
		total[r.Pair] = maxReplicates
	}
	all := append(slices.Clone(rows), Extend(rows, total)...)
	w := Describe(all, prices)
	o.WorstCase = &WorstCase{MaxReplicates: maxReplicates, Rows: len(all), Estimate: w.Estimate}
}

// FactorLevels is a field with more than one level in a plan.
type FactorLevels struct {
	Field  string   `json:"field"`
	Levels []string `json:"levels"`
}

// FieldValue is a field with one value throughout a plan.
type FieldValue struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// GroupRows is one infrastructure group and its row count.
type GroupRows struct {
	Key  string `json:"key"`
	Rows int    `json:"rows"`
	// key is the group's, for the text: on platform local it names the
	// embedded cluster, not the kafka_version its rows ask for.
	key InfraKey
}

// EstimateJSON is Estimate in seconds, for JSON.
type EstimateJSON struct {
	WallS         float64  `json:"wall_s"`
	WallMaxS      float64  `json:"wall_max_s"`
	Provisionings int      `json:"provisionings"`
	Cost          float64  `json:"cost"`
	CostMax       float64  `json:"cost_max"`
	Currency      string   `json:"currency"`
	Unpriced      []string `json:"unpriced,omitempty"`
	PriceSources  []string `json:"price_sources,omitempty"`
}

// Describe summarises validated rows (in execution order).
func Describe(rows []Row, prices *Prices) Overview {
	o := Overview{Rows: len(rows)}
	if len(rows) == 0 {
		return o
	}
	o.Campaign, o.Seed, o.Treatment, o.Baseline = rows[0].Campaign, rows[0].Seed, rows[0].Treatment, rows[0].Baseline
	cells := map[string]bool{}
	sets := map[setKey]bool{}
	groups := map[InfraKey]int{}
	var groupOrder []InfraKey
	levels := make([]map[string]Value, len(fields))
	for i := range levels {
		levels[i] = map[string]Value{}
	}
	for i := range rows {
		r := &rows[i]
		cells[r.Cell] = true
		sets[setKey{r.Pair, r.Replicate}] = true
		o.Replicates = max(o.Replicates, r.Replicate)
		k := r.InfraKey()
		if _, ok := groups[k]; !ok {
			groupOrder = append(groupOrder, k)
		}
		groups[k]++
		for j := range fields {
			v := fields[j].get(r)
			levels[j][fields[j].format(v)] = v
		}
	}
	o.Cells, o.MatchedSets = len(cells), len(sets)
	product := int64(1)
	for j := range fields {
		f := &fields[j]
		vals := make([]Value, 0, len(levels[j]))
		for _, v := range levels[j] {
			vals = append(vals, v)
		}
		slices.SortFunc(vals, func(a, b Value) int { return compareValues(f, a, b) })
		text := make([]string, len(vals))
		for i, v := range vals {
			text[i] = f.format(v)
		}
		if len(vals) > 1 || f.name == o.Treatment {
			o.Factors = append(o.Factors, FactorLevels{Field: f.name, Levels: text})
			product *= int64(len(vals))
		} else {
			o.Fixed = append(o.Fixed, FieldValue{Field: f.name, Value: text[0]})
		}
	}
	o.Absent = product - int64(o.Cells)
	for _, k := range groupOrder {
		o.Groups = append(o.Groups, GroupRows{Key: k.String(), Rows: groups[k], key: k})
	}
	o.Percentiles = percentileSupport(rows)
	o.Warnings = percentileWarnings(rows)
	est := EstimateRows(rows, prices)
	o.Estimate = EstimateJSON{
		WallS: est.Wall.Seconds(), WallMaxS: est.WallMax.Seconds(), Provisionings: est.Provisionings,
		Cost: est.Cost, CostMax: est.CostMax, Currency: est.Currency, Unpriced: est.Unpriced,
	}
	if prices != nil {
		for _, name := range slices.Sorted(maps.Keys(prices.Platforms)) {
			pl := prices.Platforms[name]
			for _, k := range groupOrder {
				if k.Platform == name {
					o.Estimate.PriceSources = append(o.Estimate.PriceSources, fmt.Sprintf("%s: %s (%s, %s)", name, pl.Source, pl.Region, pl.Date))
					break
				}
			}
		}
	}
	return o
}

func compareValues(f *fieldDef, a, b Value) int {
	switch f.kind {
	case kindInt:
		return cmp.Compare(a.Int, b.Int)
	case kindRate:
		// "max" sorts last.
		return cmp.Compare(uint64(a.Int), uint64(b.Int))
	case kindList:
		return strings.Compare(strings.Join(a.List, ","), strings.Join(b.List, ","))
	}
	return strings.Compare(a.Str, b.Str)
}

// DescribeSpec expands s in memory and describes the result, with the
// dropped combinations named by reason.
func DescribeSpec(s *Spec, prices *Prices) (Overview, error) {
	var buf bytes.Buffer
	sum, err := Expand(s, &buf)
	if err != nil {
		o := Overview{Campaign: s.Campaign, Dropped: sum.Dropped}
		return o, err
	}
	rows, err := ValidatePlan(&buf, s.Campaign+".jsonl")
	if err != nil {
		return Overview{}, fmt.Errorf("planner produced an invalid plan (a bug): %w", err)
	}
	o := Describe(rows, prices)
	o.Dropped = sum.Dropped
	return o, nil
}

// WriteText writes the overview for people.
func (o Overview) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "campaign     %s (seed %d)\n", o.Campaign, o.Seed)
	fmt.Fprintf(&b, "treatment    %s, baseline %s\n", o.Treatment, o.Baseline)
	b.WriteString("factors\n")
	for _, f := range o.Factors {
		fmt.Fprintf(&b, "  %-20s %s\n", f.Field, strings.Join(f.Levels, ", "))
	}
	b.WriteString("fixed\n")
	local := len(o.Groups) > 0
	for _, g := range o.Groups {
		local = local && g.key.Platform == DefaultPlatform
	}
	for _, f := range o.Fixed {
		v := f.Value
		if v == "" {
			v = `""`
		}
		if f.Field == "kafka_version" && local {
			v = embeddedBroker + " (Apache Kafka " + v + " with a --target TARGET.yaml naming its kafka: release)"
		}
		fmt.Fprintf(&b, "  %-20s %s\n", f.Field, v)
	}
	fmt.Fprintf(&b, "cells        %d\n", o.Cells)
	fmt.Fprintf(&b, "replicates   %d\n", o.Replicates)
	fmt.Fprintf(&b, "rows         %d\n", o.Rows)
	fmt.Fprintf(&b, "matched sets %d\n", o.MatchedSets)
	if o.Absent > 0 || len(o.Dropped) > 0 {
		fmt.Fprintf(&b, "absent       %d combinations of the levels above have no cell\n", o.Absent)
		if len(o.Dropped) > 0 {
			b.WriteString("dropped      (combinations, by reason)\n")
			for _, d := range o.Dropped {
				fmt.Fprintf(&b, "  %8d  %s\n", d.Combinations, d.Reason)
			}
		} else {
			b.WriteString("             (run `xp plan show` on the spec to see why)\n")
		}
	}
	fmt.Fprintf(&b, "infra groups %d\n", len(o.Groups))
	for _, g := range o.Groups {
		key := g.Key
		if g.key.Platform == DefaultPlatform {
			key = g.key.describe(embeddedBroker) + " (Apache Kafka " + g.key.KafkaVersion + " with a --target TARGET.yaml naming its kafka: release)"
		}
		fmt.Fprintf(&b, "  %6d rows  %s\n", g.Rows, key)
	}
	e := o.Estimate
	fmt.Fprintf(&b, "wall time    %s (at most %s if every run spends its whole drain timeout), %s\n",
		formatDuration(e.WallS), formatDuration(e.WallMaxS), Plural(e.Provisionings, "provisioning"))
	fmt.Fprintf(&b, "cost         %s %s (at most %s)\n", e.Currency, strconv.FormatFloat(e.Cost, 'f', 2, 64), strconv.FormatFloat(e.CostMax, 'f', 2, 64))
	for _, s := range e.PriceSources {
		fmt.Fprintf(&b, "  prices     %s\n", s)
	}
	if len(e.Unpriced) > 0 {
		fmt.Fprintf(&b, "  no price for %s: left out of the cost; add it to the price table\n", strings.Join(e.Unpriced, ", "))
	}
	if wc := o.WorstCase; wc != nil {
		fmt.Fprintf(&b, "two-stage    worst case at %d replicates a configuration: %d rows, %s (at most %s), %s %s (at most %s)\n",
			wc.MaxReplicates, wc.Rows, formatDuration(wc.Estimate.WallS), formatDuration(wc.Estimate.WallMaxS), wc.Estimate.Currency,
			strconv.FormatFloat(wc.Estimate.Cost, 'f', 2, 64), strconv.FormatFloat(wc.Estimate.CostMax, 'f', 2, 64))
	}
	for _, p := range o.Percentiles {
		fmt.Fprintf(&b, "percentiles  %s\n", p)
	}
	for _, warn := range o.Warnings {
		fmt.Fprintf(&b, "warning      %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// embeddedBroker is what platform local runs unless xp run --target names
// a TARGET.yaml with kafka: releases: the embedded cluster, kfake.
const embeddedBroker = "kfake"

func formatDuration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd%s", d/(24*time.Hour), (d % (24 * time.Hour)).String())
	}
	return d.String()
}
