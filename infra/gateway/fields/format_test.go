package fields

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xp-bench/xp/internal/ff1"
)

func formatCipher(t testing.TB, topic string) *FormatCipher {
	t.Helper()
	c, err := ff1.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return NewFormatCipher(c, topic)
}

// sameFormat fails unless b has a's length, a letter of a's case where a
// has a letter, a digit where a has a digit, and a's bytes elsewhere.
func sameFormat(t *testing.T, a, b []byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("length %d, want %d: %q → %q", len(b), len(a), a, b)
	}
	for i := range a {
		ca, cb := classOf(a[i]), classOf(b[i])
		if ca != cb || ca == 0 && a[i] != b[i] {
			t.Fatalf("byte %d: %q → %q changes its class or an other character: %q → %q", i, a[i], b[i], a, b)
		}
	}
}

func TestFormatStrings(t *testing.T) {
	fc := formatCipher(t, "payments")
	for _, tc := range []struct{ name, in string }{
		{"ssn", "123-45-6789"},
		{"card", "4111 1111 1111 1111"},
		{"name", "Anna-Maria O'Neil"},
		{"status", "ACTIVE"},
		{"uuid, per class", "6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e"},
		{"uuid with three letters: whole value", "61101e20-8d03-4044-9030-0131201a0f90"},
		{"address: one digit, whole value", "Apt 4, Main Street"},
		{"six digits", "000000"},
		{"non-ASCII kept", "Zoë Åsa Müller-Lüdenscheidt"},
		{"long letters (math/big rounds)", strings.Repeat("Lorem ipsum dolor sit amet ", 40)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs formatScratch
			b := []byte(tc.in)
			if err := fc.cryptString(b, "f", false, true, &fs); err != nil {
				t.Fatal(err)
			}
			sameFormat(t, []byte(tc.in), b)
			if string(b) == tc.in {
				t.Fatalf("%q encrypted to itself", tc.in)
			}
			ct := string(b)
			if err := fc.cryptString(b, "f", false, false, &fs); err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.in {
				t.Fatalf("decrypt of %q gave %q, want %q", ct, b, tc.in)
			}
			// Deterministic per topic and field; another field or topic
			// gives another ciphertext.
			again := []byte(tc.in)
			_ = fc.cryptString(again, "f", false, true, &fs)
			other := []byte(tc.in)
			_ = fc.cryptString(other, "g", false, true, &fs)
			otherTopic := []byte(tc.in)
			_ = formatCipher(t, "orders").cryptString(otherTopic, "f", false, true, &fs)
			if string(again) != ct || string(other) == ct || string(otherTopic) == ct {
				t.Fatalf("tweak: same field %q, other field %q, other topic %q, first %q", again, other, otherTopic, ct)
			}
		})
	}
}

func TestFormatRefused(t *testing.T) {
	fc := formatCipher(t, "t")
	for _, tc := range []struct {
		name, in string
		json     bool
		want     error
	}{
		{"empty", "", false, ErrFormatDomain},
		{"no letter or digit", "--- ---", false, ErrFormatDomain},
		{"two letters", "Bo", false, ErrFormatDomain},
		{"five digits", "12-345", false, ErrFormatDomain},
		{"three letters, one digit", "N/A 1", false, ErrFormatDomain},
		{"too long", strings.Repeat("a", MaxFormatLen+1), false, ErrFormatDomain},
		{"escaped letter", `\u0041lice Smith`, true, ErrFormatEscape},
		{"escaped digit", `12345\u0036789`, true, ErrFormatEscape},
		{"bad escape", `abcdef\x`, true, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs formatScratch
			b := []byte(tc.in)
			err := fc.cryptString(b, "f", tc.json, true, &fs)
			if !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if string(b) != tc.in {
				t.Fatalf("refused value changed: %q", b)
			}
		})
	}
}

func TestFormatJSONEscapesKept(t *testing.T) {
	fc := formatCipher(t, "t")
	in := `Caf\u00e9 \"Zur Post\"\n 12 Bahnhofstra\u00dfe`
	var fs formatScratch
	b := []byte(in)
	if err := fc.cryptString(b, "addr", true, true, &fs); err != nil {
		t.Fatal(err)
	}
	sameFormat(t, []byte(strings.NewReplacer(`\u00e9`, "!!!!!!", `\u00df`, "!!!!!!", `\"`, "!!", `\n`, "!!").Replace(in)),
		[]byte(strings.NewReplacer(`\u00e9`, "!!!!!!", `\u00df`, "!!!!!!", `\"`, "!!", `\n`, "!!").Replace(string(b))))
	for _, esc := range []string{`\u00e9`, `\"`, `\n`, `\u00df`} {
		if strings.Index(string(b), esc) != strings.Index(in, esc) {
			t.Fatalf("escape %s moved: %s", esc, b)
		}
	}
	var s string
	if err := json.Unmarshal([]byte(`"`+string(b)+`"`), &s); err != nil {
		t.Fatalf("ciphertext is no JSON string: %v", err)
	}
	if err := fc.cryptString(b, "addr", true, false, &fs); err != nil || string(b) != in {
		t.Fatalf("decrypt: %v %q", err, b)
	}
}

// formatRoundTrip encrypts the named fields of value with c, checks that
// the value keeps its length and that decryption restores it, and
// returns the ciphertext.
func formatRoundTrip(t *testing.T, c Codec, value []byte, fields []string) []byte {
	t.Helper()
	fc := formatCipher(t, "topic")
	var sc Scratch
	enc, found, err := c.EncryptFormat([]byte("pre"), value, fields, fc, &sc)
	if err != nil {
		t.Fatalf("encrypt: %v", err)
	}
	if len(found) != len(fields) || string(enc[:3]) != "pre" {
		t.Fatalf("found %v of %v; output %q", found, fields, enc)
	}
	enc = enc[3:]
	if len(enc) != len(value) || bytes.Equal(enc, value) {
		t.Fatalf("ciphertext %q of %q: want the same length and other bytes", enc, value)
	}
	dec, err := c.DecryptFormat(nil, enc, found, fc, &sc)
	if err != nil || !bytes.Equal(dec, value) {
		t.Fatalf("decrypt: %v\n got %q\nwant %q", err, dec, value)
	}
	return enc
}

func TestFormatJSON(t *testing.T) {
	in := `{"id":"6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e","status":"ACTIVE","ssn":"123-45-6789","notes":"abc"}`
	enc := formatRoundTrip(t, JSON{}, []byte(in), []string{"ssn", "status"})
	var before, after map[string]string
	if err := json.Unmarshal([]byte(in), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(enc, &after); err != nil {
		t.Fatalf("ciphertext is not JSON: %v", err)
	}
	for k, v := range before {
		switch k {
		case "ssn", "status":
			sameFormat(t, []byte(v), []byte(after[k]))
			if v == after[k] {
				t.Errorf("%s unchanged", k)
			}
		default:
			if after[k] != v {
				t.Errorf("%s changed: %q", k, after[k])
			}
		}
	}
	var sc Scratch
	for _, bad := range []struct{ value, want string }{
		{`{"ssn":123456789}`, "field ssn holds a number, not a JSON string"},
		{`{"ssn":null}`, "field ssn holds null"},
		{`{"ssn":{"a":"123456"}}`, "field ssn holds an object"},
		{`{"ssn":"12"}`, "field ssn: fields: value too short"},
	} {
		_, _, err := JSON{}.EncryptFormat(nil, []byte(bad.value), []string{"ssn"}, formatCipher(t, "t"), &sc)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error containing %q", bad.value, err, bad.want)
		}
	}
}

func TestFormatAvro(t *testing.T) {
	text, err := ReadAvroSchema(loadgenAvro)
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(string(text))
	in := loadgenAvroRecord{ID: "6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e", Status: "ACTIVE", SSN: "123-45-6789", Notes: strings.Repeat("n0", 450)}
	raw, err := avro.Marshal(schema, in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewAvro(text)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckStringFields([]string{"ssn", "id"}); err != nil {
		t.Fatal(err)
	}
	enc := formatRoundTrip(t, c, raw, []string{"ssn", "notes"})
	var out loadgenAvroRecord
	if err := avro.Unmarshal(schema, enc, &out); err != nil {
		t.Fatalf("ciphertext does not decode with the schema: %v", err)
	}
	sameFormat(t, []byte(in.SSN), []byte(out.SSN))
	sameFormat(t, []byte(in.Notes), []byte(out.Notes))
	if out.ID != in.ID || out.Status != in.Status || out.SSN == in.SSN {
		t.Fatalf("record after: %+v", out)
	}

	rich, err := NewAvro([]byte(richAvro))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"maybe", "secret", "e", "arr", "i"} {
		err := rich.CheckStringFields([]string{f})
		if err == nil || !strings.Contains(err.Error(), `field "`+f+`" is not a string`) {
			t.Errorf("field %s: %v, want refused as no string", f, err)
		}
	}
	if err := rich.CheckStringFields([]string{"ssn", "n"}); err != nil {
		t.Error(err)
	}
}

func TestFormatProtobuf(t *testing.T) {
	lg, err := os.ReadFile(loadgenProto)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewProtobuf(lg, "")
	if err != nil {
		t.Fatal(err)
	}
	var value []byte
	for i, v := range []string{"6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e", "ACTIVE", "123-45-6789", strings.Repeat("n", 900)} {
		value = protowire.AppendTag(value, protowire.Number(i+1), protowire.BytesType)
		value = protowire.AppendString(value, v)
	}
	enc := formatRoundTrip(t, c, value, []string{"ssn", "id"})
	if !bytes.Equal(enc[len(enc)-900:], value[len(value)-900:]) {
		t.Fatal("notes changed")
	}
	tc, err := NewProtobuf(testProtoSet(t), "t.M")
	if err != nil {
		t.Fatal(err)
	}
	if err := tc.CheckStringFields([]string{"name", "tags"}); err != nil {
		t.Error(err)
	}
	for _, f := range []string{"n", "blob", "fx"} {
		err := tc.CheckStringFields([]string{f})
		if err == nil || !strings.Contains(err.Error(), `field "`+f+`" of protobuf message t.M is not a string`) {
			t.Errorf("field %s: %v, want refused as no string", f, err)
		}
	}
	// A string field sent with another wire type is refused per record.
	v := protowire.AppendTag(nil, 1, protowire.VarintType)
	v = protowire.AppendVarint(v, 123456789)
	var sc Scratch
	if _, _, err := tc.EncryptFormat(nil, v, []string{"name"}, formatCipher(t, "t"), &sc); !errors.Is(err, ErrFieldType) {
		t.Errorf("varint in a string field: %v, want ErrFieldType", err)
	}
}

// FuzzFormat round-trips arbitrary strings: whatever is encrypted keeps
// its length, classes and other bytes and decrypts to itself; whatever is
// refused has a domain below FF1's minimum, is too long, or (JSON) holds
// an escape that is refused or malformed.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{"123-45-6789", "Anna-Maria O'Neil", "ACTIVE", "a1", "6f1c1e2a-8d0b-4c44-9a3e-0d3c2b1a0f9e",
		"Zoë 12", `caf\u00e9 au lait`, `\u0041bcdef`, "0000000000000000000000000000000000000000", "zzzzz", "\x00\xff 99999 9"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	fc := formatCipher(f, "topic")
	f.Fuzz(func(t *testing.T, in []byte, jsonText bool) {
		var fs formatScratch
		b := bytes.Clone(in)
		err := fc.cryptString(b, "field", jsonText, true, &fs)
		if err != nil {
			if !bytes.Equal(b, in) {
				t.Fatalf("refused value changed: %q → %q", in, b)
			}
			switch {
			case errors.Is(err, ErrFormatEscape), errors.Is(err, ErrMalformed):
				if !jsonText || !bytes.Contains(in, []byte{'\\'}) {
					t.Fatalf("%q: %v without a JSON escape", in, err)
				}
			case errors.Is(err, ErrFormatDomain):
				nd, nl := counts(in, jsonText)
				if len(in) <= MaxFormatLen && float64(nd)+float64(nl)*math.Log10(26) >= 6 {
					t.Fatalf("%q (%d digits, %d letters) refused: %v", in, nd, nl, err)
				}
			default:
				t.Fatalf("%q: %v", in, err)
			}
			return
		}
		if !jsonText {
			sameFormat(t, in, b)
		} else if len(b) != len(in) {
			t.Fatalf("length changed: %q → %q", in, b)
		}
		if err := fc.cryptString(b, "field", jsonText, false, &fs); err != nil || !bytes.Equal(b, in) {
			t.Fatalf("round trip of %q: %v, got %q", in, err, b)
		}
	})
}

// counts is the letters and digits outside JSON escapes.
func counts(s []byte, jsonText bool) (digits, letters int) {
	for i := 0; i < len(s); i++ {
		if jsonText && s[i] == '\\' {
			n, _ := escapeLen(s, i)
			i += max(n, 1) - 1
			continue
		}
		switch classOf(s[i]) {
		case 'd':
			digits++
		case 'u', 'l':
			letters++
		}
	}
	return digits, letters
}
