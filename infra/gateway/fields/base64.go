package fields

import (
	"bytes"
	"encoding/base64"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

// b64Cache holds the standard base64 of the start of the last envelope
// header seen: the header (version, key-encryption key id, data key id,
// wrapped data key) is the same in every envelope under one data key, so
// its text is too, cut at a multiple of 3 bytes (4 characters). Only the
// rest (nonce, ciphertext, tag) is then encoded or decoded per field.
type b64Cache struct {
	raw  []byte // header bytes, a multiple of 3
	text []byte // their base64, without padding
}

var b64 = base64.StdEncoding

// learn remembers the header of env.
func (c *b64Cache) learn(env []byte) {
	h, err := envelope.HeaderLen(env)
	if err != nil {
		c.raw, c.text = c.raw[:0], c.text[:0]
		return
	}
	h -= h % 3
	c.raw = append(c.raw[:0], env[:h]...)
	c.text = b64.AppendEncode(c.text[:0], c.raw)
}

// appendEncode appends the standard base64 of env to dst.
func (c *b64Cache) appendEncode(dst, env []byte) []byte {
	n := len(c.raw)
	if n == 0 || len(env) <= n || !bytes.Equal(env[:n], c.raw) {
		c.learn(env)
		if n = len(c.raw); n == 0 || len(env) <= n {
			return b64.AppendEncode(dst, env)
		}
	}
	dst = append(dst, c.text...)
	return b64.AppendEncode(dst, env[n:])
}

// appendDecode appends the bytes of the standard base64 text to dst.
func (c *b64Cache) appendDecode(dst, text []byte) ([]byte, error) {
	if n := len(c.text); n > 0 && len(text) > n && bytes.Equal(text[:n], c.text) {
		return b64.AppendDecode(append(dst, c.raw...), text[n:])
	}
	out, err := b64.AppendDecode(dst, text)
	if err == nil {
		c.learn(out[len(dst):])
	}
	return out, err
}
