package fields

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestB64Cache: encoding and decoding through the cache give exactly what
// encoding/base64 gives, whatever the order of envelopes under different
// data keys, of malformed input and of text that is not base64.
func TestB64Cache(t *testing.T) {
	k1, k2 := keyring(t), keyring(t)
	seal := func(s interface {
		Seal([]byte, string, []byte) ([]byte, error)
	}, pt string) []byte {
		env, err := s.Seal(nil, "f", []byte(pt))
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	s1, s2 := k1.Sealer("topic"), k2.Sealer("topic")
	a1, a2, b1 := seal(s1, "123-45-6789"), seal(s1, "x"), seal(s2, "a longer plaintext of some bytes")
	var c b64Cache
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"first envelope", a1},
		{"same data key", a2},
		{"another data key", b1},
		{"back to the first", a1},
		{"malformed envelope", []byte{9, 9, 9}},
		{"empty", []byte{}},
		{"header only, cut short", a1[:40]},
		{"after malformed", a2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := base64.StdEncoding.AppendEncode([]byte("pre"), tc.in)
			got := c.appendEncode([]byte("pre"), tc.in)
			if !bytes.Equal(got, want) {
				t.Fatalf("encode %q, want %q", got, want)
			}
			dec, err := c.appendDecode([]byte("pre"), want[3:])
			if err != nil || !bytes.Equal(dec, append([]byte("pre"), tc.in...)) {
				t.Fatalf("decode: %v %q", err, dec)
			}
		})
	}
	t.Run("text that is not base64 after the cached start", func(t *testing.T) {
		c.appendEncode(nil, a1)
		text := base64.StdEncoding.AppendEncode(nil, a1)
		text[len(text)-5] = '*'
		if _, err := c.appendDecode(nil, text); err == nil {
			t.Fatal("invalid base64 decoded")
		}
		if _, err := base64.StdEncoding.AppendDecode(nil, text); err == nil {
			t.Fatal("test text is valid base64")
		}
	})
}
