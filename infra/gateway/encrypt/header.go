package encrypt

import (
	"bytes"
	"strings"
)

// HeaderKey is the record header that marks an encrypted record; the
// gateway adds it as the record's last header on produce and removes it on
// fetch. Its value is the format version, then for field encryption a colon
// and the comma-separated names of the fields that were encrypted:
//
//	"1"            the value is one envelope (mode encrypt)
//	"1;k" "1;h" "1;kh"  ... and the key (k) and/or every other header's
//	               value (h) is one envelope too (encrypt_key, encrypt_headers)
//	"1:ssn,email"  the fields ssn and email each hold an envelope (field_encrypt)
//	"f1;k2:ssn"    the field ssn is encrypted in place with FF1 (field_encrypt,
//	               cipher fpe) under the topic's key derived from the
//	               key-encryption key k2: the key id the ciphertext has no
//	               room for
//
//	"0"            nothing is encrypted: only added when the producer's own
//	               last header is named xp.enc, so that it is never taken
//	               for the marker
//
// A record without it (produced before encryption was configured, a
// tombstone, or with none of the fields present) is passed as it is.
const HeaderKey = "xp.enc"

// plainMarker marks a record left in plaintext whose own last header
// would otherwise pass for the marker.
var plainMarker = []byte{'0'}

// formatVersion is the only marker version so far; it matches the
// envelope format version (envelope.Version1).
const formatVersion = '1'

func markerValue(names []string) []byte {
	return []byte(string(formatVersion) + ":" + strings.Join(names, ","))
}

func wholeMarker(key, headers bool) []byte {
	m := []byte{formatVersion}
	if key || headers {
		m = append(m, ';')
	}
	if key {
		m = append(m, 'k')
	}
	if headers {
		m = append(m, 'h')
	}
	return m
}

// Field paths bound into the envelopes of keys and header values.
const (
	keyField    = "key"
	headerField = "header:"
)

// formatMarkerVersion starts the marker of format-preserving field
// encryption, "f1;KEK:names".
const formatMarkerVersion = 'f'

// appendFormatMarker appends the marker of fields encrypted in place
// under the key derived from KEK kek.
func appendFormatMarker(dst []byte, kek string, names []string) []byte {
	dst = append(dst, formatMarkerVersion, '1', ';')
	dst = append(dst, kek...)
	for i, n := range names {
		if i == 0 {
			dst = append(dst, ':')
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, n...)
	}
	return dst
}

func appendMarker(dst []byte, names []string) []byte {
	dst = append(dst, formatVersion, ':')
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, n...)
	}
	return dst
}

// markerCache parses marker values, remembering the last one so a batch of
// identically marked records parses once.
type markerCache struct {
	last    []byte
	names   []string
	whole   bool
	key     bool
	headers bool
	// kek is, for a format-preserving marker, the id of the KEK its
	// fields' key derives from; "" otherwise.
	kek string
}

// parse returns whether the marker means a whole value, or else the field
// names (none for the plaintext marker); ok is false for an unknown
// version or a malformed value.
func (m *markerCache) parse(v []byte) (whole bool, names []string, ok bool) {
	if len(v) == 1 && v[0] == plainMarker[0] {
		return false, nil, true
	}
	if m.last != nil && bytes.Equal(v, m.last) {
		return m.whole, m.names, true
	}
	if len(v) > 3 && v[0] == formatMarkerVersion {
		return m.parseFormat(v)
	}
	if len(v) == 0 || v[0] != formatVersion {
		return false, nil, false
	}
	m.key, m.headers, m.kek = false, false, ""
	switch {
	case len(v) == 1:
		m.whole, m.names = true, nil
	case v[1] == ';' && len(v) > 2:
		for _, f := range v[2:] {
			switch {
			case f == 'k' && !m.key:
				m.key = true
			case f == 'h' && !m.headers:
				m.headers = true
			default:
				m.last = nil
				return false, nil, false
			}
		}
		m.whole, m.names = true, nil
	case v[1] == ':' && len(v) > 2:
		m.whole = false
		m.names = strings.Split(string(v[2:]), ",")
		for _, n := range m.names {
			if n == "" {
				m.last = nil
				return false, nil, false
			}
		}
	default:
		return false, nil, false
	}
	m.last = append(m.last[:0], v...)
	return m.whole, m.names, true
}

// parseFormat parses "f1;KEK:names".
func (m *markerCache) parseFormat(v []byte) (whole bool, names []string, ok bool) {
	bad := func() (bool, []string, bool) {
		m.last = nil
		return false, nil, false
	}
	if v[1] != '1' || v[2] != ';' {
		return bad()
	}
	kek, list, found := strings.Cut(string(v[3:]), ":")
	if !found || kek == "" || list == "" || strings.ContainsAny(kek, ";,") {
		return bad()
	}
	names = strings.Split(list, ",")
	for _, n := range names {
		if n == "" {
			return bad()
		}
	}
	m.whole, m.key, m.headers, m.names, m.kek = false, false, false, names, kek
	m.last = append(m.last[:0], v...)
	return false, names, true
}
