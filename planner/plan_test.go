package planner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// validRows is the example campaign in execution order.
func validRows(t *testing.T) []Row {
	rows, _, _ := expandRows(t, exampleSpec)
	return rows
}

func encodeRows(rows []Row) []byte {
	var b []byte
	for i := range rows {
		b = appendRowJSON(b, &rows[i])
		b = append(b, '\n')
	}
	return b
}

// reidentify recomputes a row's identities after a factor was changed on
// purpose, so only the intended problem remains.
func reidentify(r *Row) {
	r.Cell = CellOf(r)
	r.Pair = PairOf(r)
	r.Run = RunOf(r.Cell, r.Replicate)
}

func renumber(rows []Row) {
	for i := range rows {
		rows[i].Order = i + 1
	}
}

func TestValidatePlan(t *testing.T) {
	cases := []struct {
		name string
		// edit changes the rows; text, when set, edits the encoded file.
		edit func(rows []Row) []Row
		text func(b []byte) []byte
		want []string
	}{
		{name: "unknown field", text: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"security":`), []byte(`"securty":"tls","security":`), 1)
		}, want: []string{`t.jsonl:1: securty: unknown field; did you mean "security"?`}},
		{name: "missing field", text: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"acks":"all",`), nil, 1)
		}, want: []string{"t.jsonl:1: acks: missing"}},
		{name: "plan from before gateway_crypto", text: func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"gateway_crypto":"std",`), nil)
		}, want: []string{"t.jsonl:1: gateway_crypto: missing (the plan predates gateway_crypto, whose default std is part of every cell: re-expand its spec with xp plan expand)"}},
		{name: "unknown gateway_crypto", text: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"gateway_crypto":"std"`), []byte(`"gateway_crypto":"vaes"`), 1)
		}, want: []string{`t.jsonl:1: gateway_crypto: unknown level "vaes"`}},
		{name: "wrong type", text: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"brokers":3`), []byte(`"brokers":"3"`), 1)
		}, want: []string{`t.jsonl:1: brokers: want an integer, got "3"`}},
		{name: "unknown level", text: func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"compression":"none"`), []byte(`"compression":"lz5"`), 1)
		}, want: []string{`t.jsonl:1: compression: unknown level "lz5"; did you mean "lz4"?`}},
		{name: "out of range", edit: func(rows []Row) []Row {
			rows[1].Brokers = 12
			return rows
		}, want: []string{"t.jsonl:2: brokers: 12 is outside 1..9", "t.jsonl:2: cell:"}},
		{name: "factor edited by hand", edit: func(rows []Row) []Row {
			rows[2].MessageSize = 2048
			return rows
		}, want: []string{"t.jsonl:3: cell:", "hash to", "t.jsonl:3: pair:"}},
		{name: "run not cell-r", edit: func(rows []Row) []Row {
			rows[0].Run = "x"
			return rows
		}, want: []string{`t.jsonl:1: run: "x": want`}},
		{name: "cannot run", edit: func(rows []Row) []Row {
			rows[0].ReplicationFactor = 4
			reidentify(&rows[0])
			return rows
		}, want: []string{"t.jsonl:1: replication_factor: cannot run: replication_factor > brokers"}},
		{name: "block is not replicate", edit: func(rows []Row) []Row {
			rows[0].Block = 2
			return rows
		}, want: []string{"t.jsonl:1: block: 2: blocks are replicates"}},
		{name: "duplicate run", edit: func(rows []Row) []Row {
			rows = append(rows, rows[0])
			renumber(rows)
			return rows
		}, want: []string{"t.jsonl:16: run:", "duplicates line 1"}},
		{name: "duplicate order", edit: func(rows []Row) []Row {
			rows[4].Order = 2
			return rows
		}, want: []string{"t.jsonl:5: order: 2 duplicates line 2"}},
		{name: "order beyond rows", edit: func(rows []Row) []Row {
			rows[4].Order = 99
			return rows
		}, want: []string{"t.jsonl:5: order: 99 is beyond the plan's 15 rows"}},
		{name: "other campaign", edit: func(rows []Row) []Row {
			rows[2].Campaign = "other"
			return rows
		}, want: []string{`t.jsonl:3: campaign: "other" differs from line 1's "tls-overhead"`}},
		{name: "other baseline", edit: func(rows []Row) []Row {
			rows[2].Baseline = "tls"
			return rows
		}, want: []string{`t.jsonl:3: baseline: "tls" differs from line 1's "plaintext"`}},
		{name: "baseline missing", edit: func(rows []Row) []Row {
			i := slices.IndexFunc(rows, func(r Row) bool { return r.IsBaseline() && r.Replicate == 2 })
			rows = slices.Delete(rows, i, i+1)
			renumber(rows)
			return rows
		}, want: []string{"baseline: matched set", "replicate 2 has no baseline row (security plaintext)", "levels"}},
		{name: "set incomplete in a replicate", edit: func(rows []Row) []Row {
			i := slices.IndexFunc(rows, func(r Row) bool { return r.Security == "mtls" && r.Replicate == 3 })
			rows = slices.Delete(rows, i, i+1)
			renumber(rows)
			return rows
		}, want: []string{"security: matched set", "has levels plaintext,tls in replicate 3 but mtls,plaintext,tls in replicate 1"}},
		{name: "replicate missing", edit: func(rows []Row) []Row {
			rows = slices.DeleteFunc(rows, func(r Row) bool { return r.Replicate == 2 && r.MessageSize == 1024 })
			renumber(rows)
			return rows
		}, want: []string{"replicate: matched set", "has no rows in replicate 2 of 1..3"}},
		{name: "set not adjacent", edit: func(rows []Row) []Row {
			// Rows 1..3 are one matched set (the 1024-byte one or the other);
			// swap the first row with the last of the block.
			rows[0].Order, rows[4].Order = rows[4].Order, rows[0].Order
			return rows
		}, want: []string{"order: the", "are not adjacent"}},
		{name: "not json", text: func(b []byte) []byte {
			return append([]byte("campaign: yaml\n"), b...)
		}, want: []string{"t.jsonl:1: row: not a JSON object"}},
		{name: "empty", text: func([]byte) []byte { return nil }, want: []string{"t.jsonl:1: row: the plan has no rows"}},
		{name: "every problem reported", text: func(b []byte) []byte {
			b = bytes.Replace(b, []byte(`"acks":"all",`), nil, 1)
			return bytes.Replace(b, []byte(`"topics":1`), []byte(`"topic":1`), 2)
		}, want: []string{"t.jsonl:1: topic: unknown field", "t.jsonl:1: acks: missing", "t.jsonl:1: topics: missing", "t.jsonl:2: topic: unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := validRows(t)
			if tc.edit != nil {
				rows = tc.edit(rows)
			}
			b := encodeRows(rows)
			if tc.text != nil {
				b = tc.text(b)
			}
			_, err := ValidatePlan(bytes.NewReader(b), "t.jsonl")
			var perrs PlanErrors
			if !errors.As(err, &perrs) {
				t.Fatalf("err %v, want PlanErrors", err)
			}
			msg := err.Error()
			at := 0
			for _, w := range tc.want {
				i := strings.Index(msg[at:], w)
				if i < 0 {
					t.Fatalf("errors\n%s\nlack (in order) %q", msg, w)
				}
				at += i + len(w)
			}
			for _, e := range perrs {
				if !strings.HasPrefix(e.Error(), "t.jsonl:") || e.Line < 1 || e.Field == "" {
					t.Errorf("error %q is not FILE:LINE: field: reason", e.Error())
				}
			}
		})
	}
}

func TestReadPlan(t *testing.T) {
	rows := validRows(t)
	// Written out of order, read back in execution order.
	shuffled := slices.Clone(rows)
	slices.Reverse(shuffled)
	path := filepath.Join(t.TempDir(), "p.jsonl")
	if err := os.WriteFile(path, encodeRows(shuffled), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows, want %d", len(got), len(rows))
	}
	for i := range got {
		if !rowsEqual(got[i], rows[i]) {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], rows[i])
		}
	}
	if _, err := ReadPlan(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
