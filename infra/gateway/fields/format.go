package fields

import (
	"errors"
	"fmt"
	"math/big"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xp-bench/xp/internal/ff1"
)

// Format-preserving encryption of string fields (field_cipher fpe): the
// content of a string keeps its length and each character its class.
// ASCII digits stay digits and ASCII letters stay letters of the same
// case; every other byte (spaces, punctuation, separators such as '-',
// non-ASCII characters, and in JSON every escape sequence) stays where
// and what it is. The letters and digits are encrypted with FF1 (NIST SP
// 800-38G, internal/ff1) under the field's key and the tweak topic ‖ 0x00
// ‖ field name:
//
//   - Per class, when every class the value holds meets FF1's minimum
//     domain on its own (at least MinFormatDigits digits and at least
//     MinFormatLetters letters, or none of a class): the digits, in
//     order, are one numeral string in radix 10, and the letters one in
//     radix 26 (A and a are both 0; the case of each position is kept).
//     An SSN "123-45-6789" is FF1 over the nine digits.
//   - Otherwise, the value as a whole: the letters and digits, in order,
//     are one mixed-radix number (10 per digit, 26 per letter) below N =
//     10^digits · 26^letters, encrypted with FF1 in radix 2 over the bits
//     of N−1, walking the cycle (encrypting again) until the result is
//     below N; fewer than 2 steps on average. A UUID with three letters
//     is encrypted this way.
//   - A value whose N is below FF1's minimum domain of 1,000,000 (an
//     empty string, "N/A", "Bo", five digits alone) is refused with
//     ErrFormatDomain, never passed in plaintext, and so is one longer
//     than MaxFormatLen bytes.
//
// In JSON a \u escape that spells an ASCII letter or digit is refused
// (ErrFormatEscape): kept in place it would pass in plaintext.
//
// Decryption finds the same classes at the same places, so it takes the
// same branch. FF1 has no integrity: a changed ciphertext decrypts to
// another value of the same format, and so does one under another key or
// moved to another topic or field.

// Minimums and maximum of format-preserving encryption (see above).
const (
	// MinFormatDigits is the fewest digits FF1 takes on their own
	// (10^6 ≥ 1,000,000).
	MinFormatDigits = 6
	// MinFormatLetters is the fewest letters FF1 takes on their own
	// (26^5 ≥ 1,000,000).
	MinFormatLetters = 5
	// MaxFormatLen bounds a field's content in bytes: the math/big
	// rounds of long values cost the square of their length.
	MaxFormatLen = 4096
)

// Errors of format-preserving encryption, besides ErrFieldType (a field
// that is no string) and ErrMalformed.
var (
	// ErrFormatDomain means a value has too few letters and digits for
	// FF1, or is longer than MaxFormatLen.
	ErrFormatDomain = errors.New("fields: value too short or too long for format-preserving encryption")
	// ErrFormatEscape means a JSON string spells a letter or digit as a
	// \u escape.
	ErrFormatEscape = errors.New("fields: JSON string escapes a letter or digit")
)

// FormatCipher is one topic's format-preserving cipher: FF1 under the
// topic's key, with the topic bound into every tweak.
type FormatCipher struct {
	ff1   *ff1.Cipher
	topic string
}

// NewFormatCipher returns the format-preserving cipher of topic under c.
func NewFormatCipher(c *ff1.Cipher, topic string) *FormatCipher {
	return &FormatCipher{ff1: c, topic: topic}
}

// formatScratch holds the per-call buffers of format-preserving
// encryption.
type formatScratch struct {
	tweak   []byte
	digits  []byte
	letters []byte
	order   []byte // 'd' or 'a' for each letter or digit, in order
	bits    []byte
}

func (fs *formatScratch) setTweak(topic, field string) []byte {
	fs.tweak = append(fs.tweak[:0], topic...)
	fs.tweak = append(fs.tweak, 0)
	fs.tweak = append(fs.tweak, field...)
	return fs.tweak
}

// classOf is 'd' for an ASCII digit, 'u' or 'l' for an ASCII letter, 0
// for any other byte.
func classOf(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return 'd'
	case c >= 'A' && c <= 'Z':
		return 'u'
	case c >= 'a' && c <= 'z':
		return 'l'
	}
	return 0
}

// escapeLen returns the length of the JSON escape at s[i] (a backslash),
// refusing one that spells a letter or digit.
func escapeLen(s []byte, i int) (int, error) {
	if i+1 >= len(s) {
		return 0, ErrMalformed
	}
	switch s[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
		if i+6 > len(s) {
			return 0, ErrMalformed
		}
		var r rune
		for _, h := range s[i+2 : i+6] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return 0, ErrMalformed
			}
		}
		if r < 0x80 && classOf(byte(r)) != 0 {
			return 0, ErrFormatEscape
		}
		return 6, nil
	}
	return 0, ErrMalformed
}

// cryptString encrypts (enc) or decrypts the string content s in place
// for field; jsonText says s is the inside of a JSON string literal.
func (fc *FormatCipher) cryptString(s []byte, field string, jsonText, enc bool, fs *formatScratch) error {
	if len(s) > MaxFormatLen {
		return ErrFormatDomain
	}
	fs.digits, fs.letters, fs.order = fs.digits[:0], fs.letters[:0], fs.order[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if jsonText && c == '\\' {
			n, err := escapeLen(s, i)
			if err != nil {
				return err
			}
			i += n - 1
			continue
		}
		switch classOf(c) {
		case 'd':
			fs.digits = append(fs.digits, c-'0')
			fs.order = append(fs.order, 'd')
		case 'u':
			fs.letters = append(fs.letters, c-'A')
			fs.order = append(fs.order, 'a')
		case 'l':
			fs.letters = append(fs.letters, c-'a')
			fs.order = append(fs.order, 'a')
		}
	}
	nd, nl := len(fs.digits), len(fs.letters)
	tweak := fs.setTweak(fc.topic, field)
	crypt := fc.ff1.Decrypt
	if enc {
		crypt = fc.ff1.Encrypt
	}
	switch {
	case nd+nl > 0 && (nd == 0 || nd >= MinFormatDigits) && (nl == 0 || nl >= MinFormatLetters):
		if nd > 0 {
			if err := crypt(fs.digits, 10, tweak); err != nil {
				return formatErr(err)
			}
		}
		if nl > 0 {
			if err := crypt(fs.letters, 26, tweak); err != nil {
				return formatErr(err)
			}
		}
	default:
		if err := fc.cryptMixed(tweak, enc, fs); err != nil {
			return err
		}
	}
	writeBack(s, jsonText, fs.digits, fs.letters)
	return nil
}

// writeBack puts the digits and letters back at the positions of their
// classes, each letter in the case of the one it replaces.
func writeBack(s []byte, jsonText bool, digits, letters []byte) {
	di, li := 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if jsonText && c == '\\' {
			n, _ := escapeLen(s, i)
			i += n - 1
			continue
		}
		switch classOf(c) {
		case 'd':
			s[i] = '0' + digits[di]
			di++
		case 'u':
			s[i] = 'A' + letters[li]
			li++
		case 'l':
			s[i] = 'a' + letters[li]
			li++
		}
	}
}

func formatErr(err error) error {
	if errors.Is(err, ff1.ErrDomain) || errors.Is(err, ff1.ErrInput) {
		return fmt.Errorf("%w: %w", ErrFormatDomain, err)
	}
	return err
}

// cryptMixed encrypts the letters and digits of a value as one
// mixed-radix number (see the comment at the top of the file), in
// fs.digits and fs.letters in place.
func (fc *FormatCipher) cryptMixed(tweak []byte, enc bool, fs *formatScratch) error {
	nd, nl := len(fs.digits), len(fs.letters)
	ten, t26 := big.NewInt(10), big.NewInt(26)
	n := new(big.Int).Exp(ten, big.NewInt(int64(nd)), nil)
	n.Mul(n, new(big.Int).Exp(t26, big.NewInt(int64(nl)), nil))
	if n.Cmp(big.NewInt(ff1.MinDomain)) < 0 {
		return ErrFormatDomain
	}
	// The number, most significant position first.
	x, d := new(big.Int), new(big.Int)
	di, li := 0, 0
	for _, k := range fs.order {
		if k == 'd' {
			x.Mul(x, ten)
			x.Add(x, d.SetInt64(int64(fs.digits[di])))
			di++
		} else {
			x.Mul(x, t26)
			x.Add(x, d.SetInt64(int64(fs.letters[li])))
			li++
		}
	}
	width := new(big.Int).Sub(n, big.NewInt(1)).BitLen()
	fs.bits = fs.bits[:0]
	for range width {
		fs.bits = append(fs.bits, 0)
	}
	crypt := fc.ff1.Decrypt
	if enc {
		crypt = fc.ff1.Encrypt
	}
	// Cycle walking: the permutation of width-bit strings, applied until
	// it lands below n, is a permutation of [0, n).
	for {
		for i := range width {
			fs.bits[width-1-i] = byte(x.Bit(i))
		}
		if err := crypt(fs.bits, 2, tweak); err != nil {
			return formatErr(err)
		}
		x.SetInt64(0)
		for _, b := range fs.bits {
			x.Lsh(x, 1)
			if b == 1 {
				x.SetBit(x, 0, 1)
			}
		}
		if x.Cmp(n) < 0 {
			break
		}
	}
	// Back to numerals, least significant position first.
	for i := len(fs.order) - 1; i >= 0; i-- {
		if fs.order[i] == 'd' {
			di--
			x.QuoRem(x, ten, d)
			fs.digits[di] = byte(d.Int64())
		} else {
			li--
			x.QuoRem(x, t26, d)
			fs.letters[li] = byte(d.Int64())
		}
	}
	return nil
}

// stringLocator is a codec that can find the content of named string
// fields: it fills sc.spans with the content's bytes of every occurrence
// (a field that is present but no string is ErrFieldType, naming it) and
// says whether the content is JSON string text.
type stringLocator interface {
	stringSpans(value []byte, fields []string, sc *Scratch) (jsonText bool, err error)
}

// cryptFormat is EncryptFormat and DecryptFormat of every codec: the
// value is copied and each field's content encrypted or decrypted in
// place, since its length does not change.
func cryptFormat(l stringLocator, dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch, enc bool) ([]byte, []string, error) {
	jsonText, err := l.stringSpans(value, fields, sc)
	if err != nil {
		return dst, nil, err
	}
	found := sc.foundNames(fields)
	if len(found) == 0 {
		return dst, nil, nil
	}
	if !enc && len(found) != len(fields) {
		return dst, nil, fmt.Errorf("%w: a field the marker names is missing", ErrFieldType)
	}
	start := len(dst)
	dst = append(dst, value...)
	out := dst[start:]
	for _, sp := range sc.spans {
		name := fields[sp.field]
		if err := fc.cryptString(out[sp.start:sp.end], name, jsonText, enc, &sc.format); err != nil {
			return dst[:start], nil, fmt.Errorf("field %s: %w", name, err)
		}
	}
	return dst, found, nil
}

// EncryptFormat implements Codec.
func (j JSON) EncryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, []string, error) {
	return cryptFormat(j, dst, value, fields, fc, sc, true)
}

// DecryptFormat implements Codec.
func (j JSON) DecryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, error) {
	out, _, err := cryptFormat(j, dst, value, fields, fc, sc, false)
	return out, err
}

func (JSON) stringSpans(value []byte, fields []string, sc *Scratch) (bool, error) {
	var err error
	if sc.spans, err = scanJSON(value, fields, sc.spans[:0]); err != nil {
		return true, err
	}
	for i := range sc.spans {
		sp := &sc.spans[i]
		if value[sp.start] != '"' {
			return true, fmt.Errorf("%w: field %s holds %s, not a JSON string", ErrFieldType, fields[sp.field], jsonKind(value[sp.start]))
		}
		sp.start, sp.end = sp.start+1, sp.end-1
	}
	return true, nil
}

func jsonKind(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// EncryptFormat implements Codec.
func (a *Avro) EncryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, []string, error) {
	return cryptFormat(a, dst, value, fields, fc, sc, true)
}

// DecryptFormat implements Codec.
func (a *Avro) DecryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, error) {
	out, _, err := cryptFormat(a, dst, value, fields, fc, sc, false)
	return out, err
}

func (a *Avro) stringSpans(value []byte, fields []string, sc *Scratch) (bool, error) {
	if _, err := a.locate(value, fields, sc); err != nil {
		return false, err
	}
	for i := range sc.spans {
		sp := &sc.spans[i]
		if sp.aux != 1 {
			return false, fmt.Errorf("%w: field %s holds Avro bytes, not a string", ErrFieldType, fields[sp.field])
		}
		_, c, _ := readLong(value, sp.start)
		sp.start = c
	}
	return false, nil
}

// CheckStringFields reports a named field that is missing from a schema
// or may hold anything but a string: format-preserving encryption takes
// string fields, or unions of null and string (null is left as it is).
func (a *Avro) CheckStringFields(fields []string) error {
	check := func(r *avroRecord, where string) error {
		for _, f := range fields {
			i, ok := r.index[f]
			if !ok {
				return fmt.Errorf("%sfield %q is not in the Avro schema", where, f)
			}
			n := r.node.children[i]
			ok = n.kind == avBytes && n.isString
			if n.kind == avUnion {
				ok = true
				for _, b := range n.children {
					ok = ok && (b.kind == avNull || b.kind == avBytes && b.isString)
				}
			}
			if !ok {
				return fmt.Errorf("%sfield %q is not a string (or a union of null and string): field_cipher fpe encrypts strings only", where, f)
			}
		}
		return nil
	}
	if a.single != nil {
		return check(a.single, "")
	}
	for id, r := range a.byID {
		if err := check(r, fmt.Sprintf("schema id %d: ", id)); err != nil {
			return err
		}
	}
	return nil
}

// EncryptFormat implements Codec.
func (p *Protobuf) EncryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, []string, error) {
	return cryptFormat(p, dst, value, fields, fc, sc, true)
}

// DecryptFormat implements Codec.
func (p *Protobuf) DecryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, error) {
	out, _, err := cryptFormat(p, dst, value, fields, fc, sc, false)
	return out, err
}

func (p *Protobuf) stringSpans(value []byte, fields []string, sc *Scratch) (bool, error) {
	if err := p.locate(value, fields, sc); err != nil {
		return false, err
	}
	for i := range sc.spans {
		sp := &sc.spans[i]
		_, typ, _ := protowire.ConsumeTag(value[sp.start:])
		if typ != protowire.BytesType {
			return false, fmt.Errorf("%w: field %s has wire type %d, not a length-delimited string", ErrFieldType, fields[sp.field], typ)
		}
		_, n := protowire.ConsumeVarint(value[sp.start+sp.aux:])
		sp.start += sp.aux + n
	}
	return false, nil
}

// CheckStringFields reports a named field that the message does not have
// or does not declare string: format-preserving encryption takes string
// fields only.
func (p *Protobuf) CheckStringFields(fields []string) error {
	if err := p.CheckFields(fields); err != nil {
		return err
	}
	for _, f := range fields {
		if !p.strings[f] {
			return fmt.Errorf("field %q of protobuf message %s is not a string: field_cipher fpe encrypts strings only", f, p.message)
		}
	}
	return nil
}
