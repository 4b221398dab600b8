package planner

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestFieldCipherKeepsOldCells: field_cipher at its default aead, set or
// not, leaves rows byte for byte as they were before the field existed;
// fpe is a cell of its own and in every row's JSON.
func TestFieldCipherKeepsOldCells(t *testing.T) {
	base := "campaign: c\ntreatment: security\nbaseline: sasl_ssl\nfactors:\n  security: [sasl_ssl, field_encrypt]\nfixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 1000, encoding: json"
	_, _, none := expandRows(t, base+"}\n")
	_, _, aead := expandRows(t, base+", field_cipher: aead}\n")
	if !bytes.Equal(none, aead) {
		t.Fatalf("field_cipher aead changed the plan:\n%s\nwant\n%s", aead, none)
	}
	if bytes.Contains(none, []byte("field_cipher")) {
		t.Fatalf("rows at the default carry field_cipher:\n%s", none)
	}
	rows, _, fpe := expandRows(t, base+", field_cipher: fpe}\n")
	if n := bytes.Count(fpe, []byte(`"field_cipher":"fpe"`)); n != len(rows) {
		t.Fatalf("%d of %d rows carry field_cipher fpe", n, len(rows))
	}
	noneRows, _, _ := expandRows(t, base+"}\n")
	for i := range rows {
		if rows[i].Cell == noneRows[i].Cell {
			t.Errorf("fpe row %d has the aead cell %s", i, rows[i].Cell)
		}
		if v, _ := rows[i].Get("field_cipher"); v != "fpe" {
			t.Errorf("Get = %q", v)
		}
		if v, _ := noneRows[i].Get("field_cipher"); v != "aead" {
			t.Errorf("default Get = %q, want aead", v)
		}
	}
	if c := string(Canonical(&rows[0])); !strings.Contains(c, `"encrypt_fields":["ssn"],"field_cipher":"fpe","gateway_crypto"`) {
		t.Errorf("canonical form of an fpe row: %s", c)
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
		v, _ := r.Get("field_cipher")
		pairs[r.Pair] = append(pairs[r.Pair], v)
		if r.IsBaseline() != (v == "aead") {
			t.Errorf("row %s (%s): IsBaseline %v", r.Run, v, r.IsBaseline())
		}
	}
	for p, levels := range pairs {
		if len(levels) != 2 {
			t.Errorf("pair %s levels %v", p, levels)
		}
	}
}

func TestFieldCipherInPlans(t *testing.T) {
	rows, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [sasl_ssl, field_encrypt]\nfixed: {encoding: json, brokers: 1, message_size: 1024, acks: all, target_rate: 100, field_cipher: fpe}\n")
	b := encodeRows(rows)
	for _, tc := range []struct {
		name     string
		edit     func([]byte) []byte
		wantErrs string
	}{
		{"as written", func(b []byte) []byte { return b }, ""},
		{"unknown level", func(b []byte) []byte { return bytes.Replace(b, []byte(`"fpe"`), []byte(`"ff3"`), 1) },
			`t.jsonl:1: field_cipher: unknown level "ff3" (one of aead, fpe)`},
		{"left out: the aead cell, which this is not", func(b []byte) []byte { return bytes.Replace(b, []byte(`"field_cipher":"fpe",`), nil, 1) },
			"t.jsonl:1: cell: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidatePlan(bytes.NewReader(tc.edit(b)), "t.jsonl")
			if tc.wantErrs == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var pe PlanErrors
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.wantErrs) {
				t.Fatalf("%v, want %q", err, tc.wantErrs)
			}
		})
	}
	// A plan that spells the default out validates, with the default's cell.
	aeadRows, _, _ := expandRows(t, "campaign: c\nfactors:\n  security: [sasl_ssl, field_encrypt]\nfixed: {encoding: json, brokers: 1, message_size: 1024, acks: all, target_rate: 100}\n")
	explicit := bytes.Replace(encodeRows(aeadRows), []byte(`"encrypt_fields":["ssn"],`), []byte(`"encrypt_fields":["ssn"],"field_cipher":"aead",`), 1)
	got, err := ValidatePlan(bytes.NewReader(explicit), "t.jsonl")
	if err != nil || got[0].Cell != aeadRows[0].Cell || got[0].FieldCipher != "" {
		t.Fatalf("explicit aead: %v, cell %s want %s", err, got[0].Cell, aeadRows[0].Cell)
	}
}
