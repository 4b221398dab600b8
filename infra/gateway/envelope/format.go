package envelope

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"sync"

	"github.com/xp-bench/xp/internal/ff1"
)

// formatInfo starts the HKDF info of every format-preserving key; the
// topic follows it.
const formatInfo = "xp field_cipher fpe ff1-aes256 v1\x00"

// formatKeys caches the FF1 ciphers derived from a vault, by KEK id and
// topic.
type formatKeys struct {
	mu sync.RWMutex
	m  map[formatKeyName]*ff1.Cipher
}

type formatKeyName struct{ kek, topic string }

// FormatKey returns the FF1 cipher that encrypts topic's fields now and
// the id of the key-encryption key it derives from: the vault's active
// one. Format-preserving ciphertext has no room for a key id, so the
// gateway writes the id into the record's marker header instead.
func (k *Keyring) FormatKey(topic string) (string, *ff1.Cipher, error) {
	id := k.ActiveKEK()
	c, err := k.FormatKeyFor(id, topic)
	return id, c, err
}

// FormatKeyFor returns the FF1 cipher of topic under the key-encryption
// key id: AES-256 under HKDF-SHA256(KEK, no salt, info "xp field_cipher
// fpe ff1-aes256 v1" ‖ 0x00 ‖ topic). Every gateway over the same vault
// derives the same key, so any of them decrypts what another encrypted,
// and a topic's key changes when a new KEK becomes active (rotation).
// ErrUnknownKEK when the vault does not hold id.
func (k *Keyring) FormatKeyFor(id, topic string) (*ff1.Cipher, error) {
	name := formatKeyName{id, topic}
	fk := &k.format
	fk.mu.RLock()
	c := fk.m[name]
	fk.mu.RUnlock()
	if c != nil {
		return c, nil
	}
	kek, ok := k.vault.Load().key(id)
	if !ok {
		return nil, ErrUnknownKEK
	}
	key, err := hkdf.Key(sha256.New, kek, nil, formatInfo+topic, KeySize)
	if err != nil {
		return nil, fmt.Errorf("envelope: format key: %w", err)
	}
	if c, err = ff1.New(key); err != nil {
		return nil, err
	}
	fk.mu.Lock()
	if fk.m == nil || len(fk.m) >= k.opts.CacheSize {
		fk.m = map[formatKeyName]*ff1.Cipher{}
	}
	fk.m[name] = c
	fk.mu.Unlock()
	return c, nil
}

// forgetFormatKeys drops the derived keys (the vault changed: a KEK may
// have gone).
func (k *Keyring) forgetFormatKeys() {
	k.format.mu.Lock()
	k.format.m = nil
	k.format.mu.Unlock()
}
