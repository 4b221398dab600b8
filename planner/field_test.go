package planner

import (
	"bytes"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/xp-bench/xp/internal/golden"
)

// TestFieldsCoverRow: every factor field of Row is set by exactly one
// entry of the fields table, and every entry sets exactly one, so the
// table and the struct cannot drift apart.
func TestFieldsCoverRow(t *testing.T) {
	rt := reflect.TypeFor[Row]()
	first := -1
	for i := range rt.NumField() {
		if rt.Field(i).Name == "Security" {
			first = i
		}
	}
	if first < 0 {
		t.Fatal("Row has no Security field")
	}
	owner := map[string]string{}
	for i := range fields {
		f := &fields[i]
		var zero, r Row
		v := Value{Str: "x", Int: 7, List: []string{"x"}}
		f.set(&r, v)
		var changed []string
		for j := range rt.NumField() {
			if !reflect.DeepEqual(reflect.ValueOf(r).Field(j).Interface(), reflect.ValueOf(zero).Field(j).Interface()) {
				changed = append(changed, rt.Field(j).Name)
			}
		}
		if len(changed) != 1 {
			t.Errorf("field %s sets Row fields %v, want exactly one", f.name, changed)
			continue
		}
		if j, _ := rt.FieldByName(changed[0]); j.Index[0] < first {
			t.Errorf("field %s sets identity field %s", f.name, changed[0])
		}
		if o, dup := owner[changed[0]]; dup {
			t.Errorf("fields %s and %s both set Row.%s", o, f.name, changed[0])
		}
		owner[changed[0]] = f.name
		if got := f.get(&r); !f.equal(got, v) && f.kind != kindRate {
			t.Errorf("field %s: get after set gives %+v", f.name, got)
		}
	}
	if want := rt.NumField() - first; len(owner) != want {
		t.Errorf("the table sets %d of Row's %d factor fields", len(owner), want)
	}
}

// TestFieldDefaults: an optional field has a default (or derives it from
// others), a required one has none, and every default is a valid level.
func TestFieldDefaults(t *testing.T) {
	derived := map[string]bool{}
	for _, ds := range derivedFrom {
		for _, d := range ds {
			derived[d] = true
		}
	}
	for i := range fields {
		f := &fields[i]
		switch {
		case f.required && f.hasDef:
			t.Errorf("%s is required but has a default", f.name)
		case !f.required && !f.hasDef && !derived[f.name]:
			t.Errorf("%s is optional with neither a default nor a derived one", f.name)
		case f.late && !f.hasDef:
			t.Errorf("%s was added late without a default", f.name)
		case f.values == "" || f.defText == "":
			t.Errorf("%s has no line for docs/spec.md", f.name)
		}
		if f.hasDef {
			if _, ok := f.parseText(f.format(f.def)); !ok || f.rangeReason(f.def) != "" {
				t.Errorf("%s: default %s is not a valid level", f.name, f.format(f.def))
			}
		}
	}
}

const (
	docTableStart = "<!-- row fields: generated from planner/field.go; go test ./planner -run SpecDocFieldTable -update rewrites it -->\n"
	docTableEnd   = "<!-- end of row fields -->\n"
)

// fieldTable renders docs/spec.md's table of row fields from the fields
// table.
func fieldTable() string {
	var b strings.Builder
	b.WriteString("| field | values | default |\n|---|---|---|\n")
	for i := range fields {
		f := &fields[i]
		b.WriteString("| `" + f.name + "` | " + f.values + " | " + f.defText + " |\n")
	}
	return b.String()
}

// TestSpecDocFieldTable: docs/spec.md's table of row fields is the one
// the fields table renders (-update rewrites it there).
func TestSpecDocFieldTable(t *testing.T) {
	const path = "../docs/spec.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := bytes.Index(doc, []byte(docTableStart))
	z := bytes.Index(doc, []byte(docTableEnd))
	if a < 0 || z < a {
		t.Fatalf("%s has no table between %q and %q", path, docTableStart, docTableEnd)
	}
	got := fieldTable()
	if have := string(doc[a+len(docTableStart) : z]); have != got {
		if golden.Update() {
			out := slices.Concat(doc[:a+len(docTableStart)], []byte(got), doc[z:])
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's table of row fields differs from planner/field.go's (go test ./planner -run SpecDocFieldTable -update)\nhave:\n%s\nwant:\n%s", path, have, got)
	}
}

// TestRowUnmarshalLateField: a stored row from before a late field reads
// with the field's default, so its cell is recomputed unchanged.
func TestRowUnmarshalLateField(t *testing.T) {
	rows := validRows(t)
	b := appendRowJSON(nil, &rows[0])
	old := bytes.Replace(b, []byte(`"field_cipher":"aead",`), nil, 1)
	if bytes.Equal(old, b) {
		t.Fatal("row has no field_cipher to remove")
	}
	var r Row
	if err := r.UnmarshalJSON(old); err != nil {
		t.Fatal(err)
	}
	if r.FieldCipher != DefaultFieldCipher || CellOf(&r) != rows[0].Cell {
		t.Errorf("field_cipher %q, cell %s, want %q and %s", r.FieldCipher, CellOf(&r), DefaultFieldCipher, rows[0].Cell)
	}
	if err := r.UnmarshalJSON([]byte(`{"brokers":"three"}`)); err == nil || !strings.Contains(err.Error(), "brokers") {
		t.Errorf("a string for brokers: %v, want an error naming brokers", err)
	}
}
