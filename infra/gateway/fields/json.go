package fields

import (
	"bytes"
	"encoding/json"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// JSON splices top-level fields of a JSON object. The field's raw value
// text (any JSON value) is sealed and replaced by a JSON string holding the
// standard base64 of the envelope. Every occurrence of a duplicated key is
// encrypted, since JSON parsers disagree on which one wins.
type JSON struct{}

var _ Codec = JSON{}

// Encrypt implements Codec.
func (JSON) Encrypt(dst, value []byte, fields []string, s *envelope.Sealer, sc *Scratch) ([]byte, []string, error) {
	var err error
	if sc.spans, err = scanJSON(value, fields, sc.spans[:0]); err != nil {
		return dst, nil, err
	}
	if len(sc.spans) == 0 {
		return dst, nil, nil
	}
	start := len(dst)
	prev := 0
	for _, sp := range sc.spans {
		dst = append(dst, value[prev:sp.start]...)
		if sc.env, err = s.Seal(sc.env[:0], fields[sp.field], value[sp.start:sp.end]); err != nil {
			return dst[:start], nil, err
		}
		dst = append(dst, '"')
		dst = sc.b64.appendEncode(dst, sc.env)
		dst = append(dst, '"')
		prev = sp.end
	}
	dst = append(dst, value[prev:]...)
	return dst, sc.foundNames(fields), nil
}

// Decrypt implements Codec.
func (JSON) Decrypt(dst, value []byte, fields []string, topic string, o *envelope.Opener, sc *Scratch) ([]byte, error) {
	var err error
	if sc.spans, err = scanJSON(value, fields, sc.spans[:0]); err != nil {
		return dst, err
	}
	if len(sc.foundNames(fields)) != len(fields) {
		return dst, ErrFieldType
	}
	start := len(dst)
	prev := 0
	for _, sp := range sc.spans {
		v := value[sp.start:sp.end]
		if len(v) < 2 || v[0] != '"' {
			return dst[:start], ErrFieldType
		}
		if sc.env, err = sc.b64.appendDecode(sc.env[:0], v[1:len(v)-1]); err != nil {
			return dst[:start], ErrFieldType
		}
		dst = append(dst, value[prev:sp.start]...)
		if dst, err = o.Open(dst, topic, fields[sp.field], sc.env); err != nil {
			return dst[:start], err
		}
		prev = sp.end
	}
	return append(dst, value[prev:]...), nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(v []byte, i int) int {
	for i < len(v) && isSpace(v[i]) {
		i++
	}
	return i
}

// stringEnd returns the index of the quote closing the string whose
// opening quote is at v[i].
func stringEnd(v []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(v[j:], '"')
		if k < 0 {
			return 0, ErrMalformed
		}
		pos := j + k
		n := 0
		for b := pos - 1; b > i && v[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return pos, nil
		}
		j = pos + 1
	}
}

// valueEnd returns the index just past the JSON value starting at v[i].
func valueEnd(v []byte, i int) (int, error) {
	if i >= len(v) {
		return 0, ErrMalformed
	}
	switch v[i] {
	case '"':
		e, err := stringEnd(v, i)
		return e + 1, err
	case '{', '[':
		depth := 0
		for j := i; j < len(v); j++ {
			switch v[j] {
			case '"':
				e, err := stringEnd(v, j)
				if err != nil {
					return 0, err
				}
				j = e
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, ErrMalformed
	}
	j := i
	for j < len(v) {
		c := v[j]
		if c == ',' || c == '}' || c == ']' || isSpace(c) {
			break
		}
		if c == '"' || c == '{' || c == '[' || c == ':' {
			return 0, ErrMalformed
		}
		j++
	}
	if j == i {
		return 0, ErrMalformed
	}
	return j, nil
}

// scanJSON finds the values of the named keys of the top-level object v
// in one pass, without decoding anything else.
func scanJSON(v []byte, fields []string, spans []span) ([]span, error) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return spans, ErrMalformed
	}
	i = skipSpace(v, i+1)
	if i < len(v) && v[i] == '}' {
		i++
	} else {
		for {
			if i >= len(v) || v[i] != '"' {
				return spans, ErrMalformed
			}
			ke, err := stringEnd(v, i)
			if err != nil {
				return spans, err
			}
			key := v[i+1 : ke]
			i = skipSpace(v, ke+1)
			if i >= len(v) || v[i] != ':' {
				return spans, ErrMalformed
			}
			vs := skipSpace(v, i+1)
			ve, err := valueEnd(v, vs)
			if err != nil {
				return spans, err
			}
			if f := matchKey(key, fields); f >= 0 {
				spans = append(spans, span{start: vs, end: ve, field: f})
			}
			i = skipSpace(v, ve)
			if i >= len(v) {
				return spans, ErrMalformed
			}
			if v[i] == '}' {
				i++
				break
			}
			if v[i] != ',' {
				return spans, ErrMalformed
			}
			i = skipSpace(v, i+1)
		}
	}
	if skipSpace(v, i) != len(v) {
		return spans, ErrMalformed
	}
	return spans, nil
}

func matchKey(key []byte, fields []string) int {
	if bytes.IndexByte(key, '\\') >= 0 {
		// An escaped key ("s\u0073n") is the same key to a parser.
		var s string
		q := make([]byte, 0, len(key)+2)
		q = append(append(append(q, '"'), key...), '"')
		if json.Unmarshal(q, &s) != nil {
			return -1
		}
		key = []byte(s)
	}
	for i, f := range fields {
		if string(key) == f {
			return i
		}
	}
	return -1
}
