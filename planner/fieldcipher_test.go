package planner

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestFieldCipherKeepsOldCells: at its default, aead, field_cipher is
// left out of the canonical form, so a row keeps the cell it had before
// the field existed, and a row written then (without the field) reads as
// aead with that cell; fpe is a cell of its own.
func TestFieldCipherKeepsOldCells(t *testing.T) {
	base := "campaign: c\ntreatment: security\nbaseline: sasl_ssl\nfactors:\n  security: [sasl_ssl, field_encrypt]\nfixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 1000, encoding: json"
	rows, _, none := expandRows(t, base+"}\n")
	_, _, aead := expandRows(t, base+", field_cipher: aead}\n")
	if !bytes.Equal(none, aead) {
		t.Fatalf("field_cipher aead spelled out changed the plan:\n%s\nwant\n%s", aead, none)
	}
	if n := bytes.Count(none, []byte(`"field_cipher":"aead"`)); n != len(rows) {
		t.Fatalf("%d of %d rows carry field_cipher aead", n, len(rows))
	}
	for i := range rows {
		if c := string(Canonical(&rows[i])); strings.Contains(c, "field_cipher") {
			t.Fatalf("canonical form at the default names field_cipher: %s", c)
		}
	}
	// A row from before the field: the same cells, read as aead.
	old := bytes.ReplaceAll(none, []byte(`"field_cipher":"aead",`), nil)
	got, err := ValidatePlan(bytes.NewReader(old), "old.jsonl")
	if err != nil {
		t.Fatalf("a plan from before field_cipher: %v", err)
	}
	for i := range got {
		if got[i].Cell != rows[i].Cell || got[i].FieldCipher != FieldCipherAEAD {
			t.Fatalf("row %d read as cell %s cipher %q, want %s aead", i, got[i].Cell, got[i].FieldCipher, rows[i].Cell)
		}
	}

	fpeRows, _, fpe := expandRows(t, base+", field_cipher: fpe}\n")
	if n := bytes.Count(fpe, []byte(`"field_cipher":"fpe"`)); n != len(fpeRows) {
		t.Fatalf("%d of %d rows carry field_cipher fpe", n, len(fpeRows))
	}
	for i := range fpeRows {
		if fpeRows[i].Cell == rows[i].Cell {
			t.Errorf("fpe row %d has the aead cell %s", i, rows[i].Cell)
		}
	}
	if c := string(Canonical(&fpeRows[0])); !strings.Contains(c, `"encrypt_fields":["ssn"],"field_cipher":"fpe","gateway_crypto"`) {
		t.Errorf("canonical form of an fpe row: %s", c)
	}
	// An fpe row that loses the field reads as aead, whose cell it is not.
	if _, err := ValidatePlan(bytes.NewReader(bytes.Replace(fpe, []byte(`"field_cipher":"fpe",`), nil, 1)), "t.jsonl"); err == nil || !strings.Contains(err.Error(), "t.jsonl:1: cell: ") {
		t.Errorf("fpe row without field_cipher: %v, want a cell mismatch", err)
	}
	var pe PlanErrors
	_, err = ValidatePlan(bytes.NewReader(bytes.Replace(fpe, []byte(`"fpe"`), []byte(`"ff3"`), 1)), "t.jsonl")
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), `t.jsonl:1: field_cipher: unknown level "ff3" (one of aead, fpe)`) {
		t.Errorf("unknown level: %v", err)
	}
}

// TestFieldCipherTreatment: field_cipher as the treatment pairs aead and
// fpe rows of one configuration.
func TestFieldCipherTreatment(t *testing.T) {
	rows, sum, _ := expandRows(t, "campaign: c\ntreatment: field_cipher\nbaseline: aead\nfactors:\n  field_cipher: [aead, fpe]\n  concurrency: [10, 50]\nfixed: {security: field_encrypt, encoding: json, brokers: 1, message_size: 1024, acks: all, target_rate: max}\n")
	if sum.Rows != 4 || sum.MatchedSets != 2 {
		t.Fatalf("rows %d, matched sets %d; want 4 and 2", sum.Rows, sum.MatchedSets)
	}
	pairs := map[string][]string{}
	for _, r := range rows {
		pairs[r.Pair] = append(pairs[r.Pair], r.FieldCipher)
		if r.IsBaseline() != (r.FieldCipher == FieldCipherAEAD) {
			t.Errorf("row %s (%s): IsBaseline %v", r.Run, r.FieldCipher, r.IsBaseline())
		}
	}
	for p, levels := range pairs {
		if len(levels) != 2 {
			t.Errorf("pair %s levels %v", p, levels)
		}
	}
}
