package planner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// appendRowJSON writes r as one JSON object: the identity fields, then
// every factor field in the fields table's order, each as its kind writes
// it (a sparse field only away from its default; an encrypt_fields never
// set is null).
func appendRowJSON(b []byte, r *Row) []byte {
	str := func(k, v string) {
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, v)
	}
	num := func(k string, v int64) {
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = strconv.AppendInt(b, v, 10)
	}
	b = append(b, `{"campaign":`...)
	b = appendString(b, r.Campaign)
	str("run", r.Run)
	str("cell", r.Cell)
	str("pair", r.Pair)
	num("replicate", int64(r.Replicate))
	num("block", int64(r.Block))
	num("order", int64(r.Order))
	num("seed", r.Seed)
	str("treatment", r.Treatment)
	str("baseline", r.Baseline)
	for i := range fields {
		f := &fields[i]
		v := f.get(r)
		if f.sparse && f.equal(v, f.def) {
			continue
		}
		b = append(b, jsonKeys[i]...)
		if f.kind == kindList && v.List == nil {
			b = append(b, "null"...)
			continue
		}
		b = appendValue(b, f, v)
	}
	return append(b, '}')
}

// jsonKeys are the factor fields' keys as a row writes them: `,"name":`.
var jsonKeys = func() []string {
	k := make([]string, len(fields))
	for i, f := range fields {
		k[i] = "," + string(appendString(nil, f.name)) + ":"
	}
	return k
}()

// MarshalJSON writes r as a JSONL plan row does (appendRowJSON).
func (r Row) MarshalJSON() ([]byte, error) { return appendRowJSON(nil, &r), nil }

// UnmarshalJSON reads a row as MarshalJSON writes it, checking each
// value's JSON type as encoding/json would, but not levels, ranges or
// identities (ValidatePlan does those). Unknown keys are ignored; a
// field added late and absent takes its default, as in a plan row from
// before it; any other absent field keeps its zero value.
func (r *Row) UnmarshalJSON(b []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	*r = Row{}
	ids := []any{&r.Campaign, &r.Run, &r.Cell, &r.Pair, &r.Replicate, &r.Block, &r.Order, &r.Seed, &r.Treatment, &r.Baseline}
	for i, k := range identityNames {
		if raw, ok := obj[k]; ok {
			if err := json.Unmarshal(raw, ids[i]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	for i := range fields {
		f := &fields[i]
		raw, ok := obj[f.name]
		if !ok || bytes.Equal(raw, []byte("null")) {
			if f.late {
				f.set(r, f.def)
			}
			continue
		}
		var v Value
		var err error
		switch f.kind {
		case kindInt:
			err = json.Unmarshal(raw, &v.Int)
		case kindRate:
			var rate Rate
			err = rate.UnmarshalJSON(raw)
			v.Int = int64(rate)
		case kindList:
			err = json.Unmarshal(raw, &v.List)
		default:
			err = json.Unmarshal(raw, &v.Str)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		f.set(r, v)
	}
	return nil
}
