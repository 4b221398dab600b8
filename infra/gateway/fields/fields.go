// Package fields encrypts and decrypts named top-level fields of structured
// record values in place: JSON (a streaming scan locates the field, whose
// value becomes a base64 string of the envelope), Avro (binary, optionally
// with Confluent framing; walked by schema, the field must be string or
// bytes or a union with them) and Protobuf (walked by wire format, the
// field becomes a length-delimited field of the same number holding the
// envelope). Bytes outside the fields are copied, never decoded and
// re-encoded, so decrypting restores the value byte for byte.
//
// The plaintext sealed for a field is exactly the bytes it replaced: for
// JSON the raw value text (quotes included), for Avro the string or bytes
// datum (length and content), for Protobuf the whole field (tag and
// payload). The field path bound into the envelope's authenticated data is
// the field name.
//
// With format-preserving encryption (EncryptFormat, format.go) a string
// field's content is encrypted in place with FF1 instead, keeping its
// length and the class of every character; everything else is copied.
package fields

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// Errors callers branch on.
var (
	// ErrMalformed means the value does not parse in its encoding.
	ErrMalformed = errors.New("fields: value does not parse")
	// ErrFieldType means a named field has a type that cannot carry an
	// envelope (Avro: not string/bytes), or an encrypted field does not
	// hold an envelope where one is expected.
	ErrFieldType = errors.New("fields: field cannot hold an envelope")
)

// Codec splices named fields of one encoding. Codecs are immutable and
// safe for concurrent use; per-call state lives in Scratch.
type Codec interface {
	// Encrypt appends to dst the value with every named field's value
	// sealed. It returns the names of the fields it found, in the order of
	// fields (a sub-slice of fields' values); when none is present it
	// returns dst unchanged and no names.
	Encrypt(dst, value []byte, fields []string, s *envelope.Sealer, sc *Scratch) ([]byte, []string, error)
	// Decrypt appends to dst the value with every named field (all of
	// which must be present and encrypted) opened.
	Decrypt(dst, value []byte, fields []string, topic string, o *envelope.Opener, sc *Scratch) ([]byte, error)
	// EncryptFormat appends to dst the value with the content of every
	// named field, which must be a string, encrypted in place by fc,
	// keeping its length and the class of each character (format.go).
	// It returns the names found, as Encrypt does.
	EncryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, []string, error)
	// DecryptFormat appends to dst the value with every named field (all
	// of which must be present) decrypted in place by fc.
	DecryptFormat(dst, value []byte, fields []string, fc *FormatCipher, sc *Scratch) ([]byte, error)
}

// Scratch holds reusable buffers for one goroutine.
type Scratch struct {
	env   []byte
	plain []byte
	found []string
	spans []span
	// Avro: field positions to visit, for planRec and planFields.
	plan       []int
	planRec    *avroRecord
	planFields []string
	// Protobuf: the numbers and string-ness of pbFields in pb.
	pb        *Protobuf
	pbFields  []string
	pbNums    []protowire.Number
	pbStrings []bool
	// Base64 of string fields: the constant start of the envelopes.
	b64 b64Cache
	// Format-preserving encryption's buffers.
	format formatScratch
}

type span struct {
	start, end int // value bytes to replace
	field      int // index into fields
	aux        int // encoding-specific (Avro: string/bytes; Protobuf: unused)
}

func (sc *Scratch) foundNames(fields []string) []string {
	sc.found = sc.found[:0]
	for i, f := range fields {
		for _, s := range sc.spans {
			if s.field == i {
				sc.found = append(sc.found, f)
				break
			}
		}
	}
	return sc.found
}
