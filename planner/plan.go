package planner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

// PlanError is one problem of a plan file: FILE:LINE: field: reason.
type PlanError struct {
	File   string
	Line   int
	Field  string
	Reason string
}

func (e PlanError) Error() string {
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Reason)
}

// PlanErrors is every problem found in a plan, in line order.
type PlanErrors []PlanError

func (es PlanErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// identity fields of a row, in Row's order.
var identityNames = []string{"campaign", "run", "cell", "pair", "replicate", "block", "order", "seed", "treatment", "baseline"}

// rawFields splits a row with no unknown fields into its fields' raw
// values, in rowNames order (nil when missing). ok is false for anything
// else, which the caller then decodes the slow way to explain.
func rawFields(line []byte) (raws []json.RawMessage, ok bool) {
	ptr := reflect.New(rawRowType)
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(ptr.Interface()); err != nil || dec.More() {
		return nil, false
	}
	v := ptr.Elem()
	raws = make([]json.RawMessage, v.NumField())
	for i := range raws {
		raws[i] = v.Field(i).Interface().(json.RawMessage)
	}
	return raws, true
}

// rawRowType has one raw field per name of rowNames, in that order.
var rawRowType = func() reflect.Type {
	var fs []reflect.StructField
	for _, name := range rowNames {
		fs = append(fs, reflect.StructField{
			Name: "F_" + name,
			Type: reflect.TypeFor[json.RawMessage](),
			Tag:  reflect.StructTag(`json:"` + name + `"`),
		})
	}
	return reflect.StructOf(fs)
}()

// rowNames are every field of a plan row; knownNames the same as a set.
var (
	rowNames   = append(slices.Clone(identityNames), FieldNames()...)
	knownNames = func() map[string]bool {
		m := map[string]bool{}
		for _, k := range rowNames {
			m[k] = true
		}
		return m
	}()
)

// ReadPlan reads and validates the plan file at path. It returns the rows
// in execution order, or a PlanErrors listing every problem (an I/O error
// is returned as is).
func ReadPlan(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ValidatePlan(f, path)
}

// ValidatePlan reads a JSONL plan from r (name is used in messages) and
// checks it: schema, types and ranges, rows that cannot run, recomputed
// cell/pair/run, one campaign/seed/treatment/baseline, duplicate runs,
// block = replicate, order contiguous from 1, and every matched set (pair,
// replicate) complete with its baseline, present in every replicate with
// the same treatment levels, and adjacent in order. Rows come back sorted
// by order.
func ValidatePlan(r io.Reader, name string) ([]Row, error) {
	v := &planValidator{file: name}
	br := bufio.NewReaderSize(r, 64<<10)
	var rows []Row
	var lines []int
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if row, ok := v.row(n, line); ok {
				rows = append(rows, row)
				lines = append(lines, n)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(rows) == 0 && len(v.errs) == 0 {
		v.errf(1, "row", "the plan has no rows")
	}
	if len(v.errs) == 0 {
		v.across(rows, lines)
	}
	if len(v.errs) > 0 {
		slices.SortStableFunc(v.errs, func(a, b PlanError) int { return a.Line - b.Line })
		return nil, v.errs
	}
	slices.SortFunc(rows, func(a, b Row) int { return a.Order - b.Order })
	return rows, nil
}

type planValidator struct {
	file string
	errs PlanErrors
}

func (v *planValidator) errf(line int, field, format string, a ...any) {
	v.errs = append(v.errs, PlanError{File: v.file, Line: line, Field: field, Reason: fmt.Sprintf(format, a...)})
}

// row decodes and checks one line on its own.
func (v *planValidator) row(n int, line []byte) (Row, bool) {
	var r Row
	before := len(v.errs)
	if raws, ok := rawFields(line); ok {
		// The common case: exactly the known fields, each once.
		for i, raw := range raws {
			if raw == nil {
				if !v.defaultFor(&r, rowNames[i]) {
					v.errf(n, rowNames[i], "%s", missingReason(rowNames[i]))
				}
				continue
			}
			v.decodeField(n, &r, rowNames[i], raw)
		}
	} else {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			if bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
				v.errf(n, "row", "malformed JSON: %v", err)
			} else {
				v.errf(n, "row", "not a JSON object")
			}
			return r, false
		}
		if obj == nil {
			v.errf(n, "row", "not a JSON object")
			return r, false
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			if !knownNames[key] {
				v.errf(n, key, "unknown field%s", yamlcheck.Suggestion(key, rowNames))
				continue
			}
			v.decodeField(n, &r, key, obj[key])
		}
		for _, k := range rowNames {
			if _, ok := obj[k]; !ok && !v.defaultFor(&r, k) {
				v.errf(n, k, "%s", missingReason(k))
			}
		}
	}
	if len(v.errs) > before {
		return r, false
	}
	v.checkRow(n, &r)
	return r, len(v.errs) == before
}

// defaultFor gives r the default of a field a row may leave out (one
// left out of the cell at its default: plans from before it), reporting
// whether it is one.
func (v *planValidator) defaultFor(r *Row, name string) bool {
	i := fieldIndex(name)
	if i < 0 || !fields[i].late {
		return false
	}
	fields[i].set(r, fields[i].def)
	return true
}

// missingReason says that a field is missing, and for fields added after
// plans were first written, how to get a plan that has them.
func missingReason(field string) string {
	if field == "gateway_crypto" {
		return "missing (the plan predates gateway_crypto, whose default std is part of every cell: re-expand its spec with xp plan expand)"
	}
	return "missing"
}

func (v *planValidator) decodeField(n int, r *Row, key string, raw json.RawMessage) {
	wantString := func(dst *string) {
		if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
			*dst = string(raw[1 : len(raw)-1])
			return
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			v.errf(n, key, "want a string, got %s", raw)
		}
	}
	wantInt := func(dst *int64) {
		x, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			v.errf(n, key, "want an integer, got %s", raw)
			return
		}
		*dst = x
	}
	var x int64
	switch key {
	case "campaign":
		wantString(&r.Campaign)
	case "run":
		wantString(&r.Run)
	case "cell":
		wantString(&r.Cell)
	case "pair":
		wantString(&r.Pair)
	case "treatment":
		wantString(&r.Treatment)
	case "baseline":
		wantString(&r.Baseline)
	case "replicate":
		wantInt(&x)
		r.Replicate = int(x)
	case "block":
		wantInt(&x)
		r.Block = int(x)
	case "order":
		wantInt(&x)
		r.Order = int(x)
	case "seed":
		wantInt(&r.Seed)
	default:
		f := &fields[fieldIndex(key)]
		var val Value
		switch f.kind {
		case kindInt:
			wantInt(&val.Int)
		case kindRate:
			if string(raw) == `"max"` {
				val.Int = int64(RateMax)
			} else {
				wantInt(&val.Int)
				if val.Int <= 0 {
					v.errf(n, key, `want a positive integer or "max", got %s`, raw)
					return
				}
			}
		case kindList:
			if err := json.Unmarshal(raw, &val.List); err != nil || val.List == nil {
				v.errf(n, key, "want an array of strings, got %s", raw)
				return
			}
			if msg := f.checkWord(val.List); msg != "" {
				v.errf(n, key, "%s", msg)
				return
			}
		case kindEnum:
			wantString(&val.Str)
			if !slices.Contains(f.enum, val.Str) {
				v.errf(n, key, "unknown level %s%s (one of %s)", raw, yamlcheck.Suggestion(val.Str, f.enum), strings.Join(f.enum, ", "))
				return
			}
		case kindText:
			wantString(&val.Str)
			if !f.pattern.MatchString(val.Str) {
				v.errf(n, key, "%s is not %s", raw, f.hint)
				return
			}
		}
		f.set(r, val)
	}
}

// checkRow checks one decoded row: ranges, runnability, identities.
func (v *planValidator) checkRow(n int, r *Row) {
	if !reCampaign.MatchString(r.Campaign) {
		v.errf(n, "campaign", "%q: want lower-case letters, digits and '-'", r.Campaign)
	}
	inRange := true
	for i := range fields {
		f := &fields[i]
		if why := f.rangeReason(f.get(r)); why != "" {
			v.errf(n, f.name, "%s is %s", f.format(f.get(r)), strings.TrimPrefix(why, f.name+" "))
			inRange = false
		}
	}
	if why := cannotRun(r); why != "" && inRange {
		field := reasonField[why]
		if c := surfaceFailure(r); c != nil && c.reason == why {
			field = c.field
		}
		v.errf(n, field, "cannot run: %s", why)
	}
	if r.Replicate < 1 {
		v.errf(n, "replicate", "%d: want 1 or more", r.Replicate)
	}
	if r.Block != r.Replicate {
		v.errf(n, "block", "%d: blocks are replicates, want %d", r.Block, r.Replicate)
	}
	if r.Order < 1 {
		v.errf(n, "order", "%d: want 1 or more", r.Order)
	}
	ti := fieldIndex(r.Treatment)
	if ti < 0 {
		v.errf(n, "treatment", "%q is not a factor field%s", r.Treatment, yamlcheck.Suggestion(r.Treatment, FieldNames()))
	} else if _, ok := fields[ti].parseText(r.Baseline); !ok {
		v.errf(n, "baseline", "%q is not a value of %s", r.Baseline, r.Treatment)
	}
	if cell := CellOf(r); r.Cell != cell {
		v.errf(n, "cell", "%q, but the factor fields hash to %q (a factor was edited by hand? re-expand the spec)", r.Cell, cell)
	}
	if ti >= 0 {
		if pair := PairOf(r); r.Pair != pair {
			v.errf(n, "pair", "%q, but the factor fields without %s hash to %q", r.Pair, r.Treatment, pair)
		}
	}
	if want := RunOf(r.Cell, r.Replicate); r.Run != want {
		v.errf(n, "run", "%q: want %q (cell-r<replicate>)", r.Run, want)
	}
}

// setKey identifies a matched set.
type setKey struct {
	pair      string
	replicate int
}

// across checks what involves several rows.
func (v *planValidator) across(rows []Row, lines []int) {
	first := &rows[0]
	runs := map[string]int{}
	orders := map[int]int{}
	maxRep := 0
	for i := range rows {
		r, n := &rows[i], lines[i]
		differs := func(field, got, want string) {
			v.errf(n, field, "%s differs from line %d's %s; one plan is one campaign", got, lines[0], want)
		}
		if r.Campaign != first.Campaign {
			differs("campaign", strconv.Quote(r.Campaign), strconv.Quote(first.Campaign))
		}
		if r.Seed != first.Seed {
			differs("seed", strconv.FormatInt(r.Seed, 10), strconv.FormatInt(first.Seed, 10))
		}
		if r.Treatment != first.Treatment {
			differs("treatment", strconv.Quote(r.Treatment), strconv.Quote(first.Treatment))
		}
		if r.Baseline != first.Baseline {
			differs("baseline", strconv.Quote(r.Baseline), strconv.Quote(first.Baseline))
		}
		if l, dup := runs[r.Run]; dup {
			v.errf(n, "run", "%s duplicates line %d", r.Run, l)
		} else {
			runs[r.Run] = n
		}
		if r.Order > len(rows) {
			v.errf(n, "order", "%d is beyond the plan's %d rows; orders run 1..%d", r.Order, len(rows), len(rows))
		} else if l, dup := orders[r.Order]; dup {
			v.errf(n, "order", "%d duplicates line %d; orders run 1..%d, once each", r.Order, l, len(rows))
		} else {
			orders[r.Order] = n
		}
		maxRep = max(maxRep, r.Replicate)
	}
	if len(v.errs) > 0 {
		return
	}
	// Matched sets: complete with their baseline, the same treatment
	// levels in every replicate, adjacent in order.
	type setInfo struct {
		line, minOrder, maxOrder, count int
		levels                          []string
		baseline                        bool
	}
	sets := map[setKey]*setInfo{}
	pairs := map[string]int{} // pair -> first line
	var pairOrder []string
	for i := range rows {
		r := &rows[i]
		k := setKey{r.Pair, r.Replicate}
		s := sets[k]
		if s == nil {
			s = &setInfo{line: lines[i], minOrder: r.Order, maxOrder: r.Order}
			sets[k] = s
		}
		if _, ok := pairs[r.Pair]; !ok {
			pairs[r.Pair] = lines[i]
			pairOrder = append(pairOrder, r.Pair)
		}
		level, _ := r.Get(r.Treatment)
		s.levels = append(s.levels, level)
		s.baseline = s.baseline || level == r.Baseline
		s.minOrder, s.maxOrder = min(s.minOrder, r.Order), max(s.maxOrder, r.Order)
		s.count++
	}
	for _, p := range pairOrder {
		var ref *setInfo
		refRep := 0
		for rep := 1; rep <= maxRep; rep++ {
			s := sets[setKey{p, rep}]
			if s == nil {
				v.errf(pairs[p], "replicate", "matched set %s has no rows in replicate %d of 1..%d", p, rep, maxRep)
				continue
			}
			slices.Sort(s.levels)
			if !s.baseline {
				v.errf(s.line, "baseline", "matched set %s replicate %d has no baseline row (%s %s)", p, rep, first.Treatment, first.Baseline)
			}
			if s.maxOrder-s.minOrder+1 != s.count {
				v.errf(s.line, "order", "the %d rows of matched set %s replicate %d are not adjacent (orders %d..%d)", s.count, p, rep, s.minOrder, s.maxOrder)
			}
			if ref == nil {
				ref, refRep = s, rep
			} else if !slices.Equal(ref.levels, s.levels) {
				v.errf(s.line, first.Treatment, "matched set %s has levels %s in replicate %d but %s in replicate %d",
					p, strings.Join(s.levels, ","), rep, strings.Join(ref.levels, ","), refRep)
			}
		}
	}
}
