package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// Canonical returns the canonical JSON of r's factor fields that `cell`
// hashes: every factor field, keys sorted, no whitespace, integers as
// integers, target_rate as an integer or "max", encrypt_fields as a sorted
// array of strings; a field added after cells were first hashed
// (field_cipher) only when it is not at its default, so that old cells
// keep their identity. Fields named in omit are left out (`pair` omits
// the treatment field).
func Canonical(r *Row, omit ...string) []byte {
	skip := -1
	if len(omit) > 1 {
		panic("planner.Canonical: at most one field to omit")
	}
	if len(omit) == 1 {
		skip = fieldIndex(omit[0])
	}
	return appendCanonical(make([]byte, 0, 640), r, skip)
}

func appendCanonical(b []byte, r *Row, skip int) []byte {
	b = append(b, '{')
	first := true
	for _, i := range canonicalIdx {
		if i == skip {
			continue
		}
		f := &fields[i]
		v := f.get(r)
		if f.omitted(v) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, f.name)
		b = append(b, ':')
		b = appendValue(b, f, v)
	}
	return append(b, '}')
}

func appendValue(b []byte, f *fieldDef, v Value) []byte {
	switch f.kind {
	case kindInt:
		return strconv.AppendInt(b, v.Int, 10)
	case kindRate:
		if v.Int == int64(RateMax) {
			return append(b, `"max"`...)
		}
		return strconv.AppendInt(b, v.Int, 10)
	case kindList:
		b = append(b, '[')
		for j, s := range v.List {
			if j > 0 {
				b = append(b, ',')
			}
			b = appendString(b, s)
		}
		return append(b, ']')
	}
	return appendString(b, v.Str)
}

// appendString writes s as a JSON string, escaping as encoding/json does.
// Validated values never need escaping; the escapes are for safety.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// hash12 is the first 12 hex digits of the SHA-256 of b.
func hash12(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// CellOf returns the cell identity of r: the first 12 hex digits of the
// SHA-256 of Canonical(r).
func CellOf(r *Row) string { return hash12(Canonical(r)) }

// PairOf returns the pair identity of r: as CellOf with r's treatment field
// left out, so the rows of one matched set share it.
func PairOf(r *Row) string { return hash12(Canonical(r, r.Treatment)) }

// RunOf returns the run identity of r: "<cell>-r<replicate>".
func RunOf(cell string, replicate int) string {
	return cell + "-r" + strconv.Itoa(replicate)
}
