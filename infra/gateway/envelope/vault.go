package envelope

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of every key xp uses: AES-256.
const KeySize = 32

// MaxKeyID bounds a key-encryption key id; it is written into every
// envelope behind a one-byte length.
const MaxKeyID = 64

// Vault holds key-encryption keys (KEKs) read from a key file. The file is
// plain text, one key a line: `ID BASE64KEY` (32 bytes, standard base64);
// blank lines and lines starting with '#' are ignored. The LAST key in the
// file is the active one that wraps new data keys; every key stays usable
// for unwrapping, so rotation is adding a line (AddKey) and old data keeps
// decrypting as long as its key stays in the file. The file must be mode
// 0600 or stricter: a key file readable by group or others is refused.
type Vault struct {
	path   string
	keys   map[string][]byte
	active string
}

// ErrUnknownKEK is returned when an envelope names a key-encryption key the
// vault does not hold.
var ErrUnknownKEK = errors.New("envelope: key-encryption key not in vault")

// OpenVault reads the key file at path.
func OpenVault(path string) (*Vault, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key vault: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key vault %s: mode %04o lets group or others read keys; run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key vault: %w", err)
	}
	v, err := parseVault(path, data)
	if err != nil {
		return nil, err
	}
	if v.active == "" {
		return nil, fmt.Errorf("key vault %s: no keys; add one with `ID BASE64KEY` (32 random bytes) or envelope.AddKey", path)
	}
	return v, nil
}

func parseVault(path string, data []byte) (*Vault, error) {
	v := &Vault{path: path, keys: map[string][]byte{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		parts := strings.Fields(text)
		if len(parts) != 2 {
			return nil, fmt.Errorf("%s:%d: want `ID BASE64KEY`, got %d fields", path, line, len(parts))
		}
		id := parts[0]
		if err := checkKeyID(id); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		key, err := base64.StdEncoding.DecodeString(parts[1])
		if err != nil || len(key) != KeySize {
			return nil, fmt.Errorf("%s:%d: key %q: want %d bytes in standard base64", path, line, id, KeySize)
		}
		if _, dup := v.keys[id]; dup {
			return nil, fmt.Errorf("%s:%d: key id %q appears twice; ids are permanent, add a new id to rotate", path, line, id)
		}
		v.keys[id] = key
		v.active = id
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("key vault %s: %w", path, err)
	}
	return v, nil
}

func checkKeyID(id string) error {
	if id == "" || len(id) > MaxKeyID {
		return fmt.Errorf("key id %q: want 1..%d characters", id, MaxKeyID)
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return fmt.Errorf("key id %q: only letters, digits, '-', '_' and '.' are allowed", id)
		}
	}
	return nil
}

// ActiveID is the id of the key that wraps new data keys.
func (v *Vault) ActiveID() string { return v.active }

// Path is the key file the vault was read from.
func (v *Vault) Path() string { return v.path }

// IDs lists the key ids the vault holds, in no particular order.
func (v *Vault) IDs() []string {
	ids := make([]string, 0, len(v.keys))
	for id := range v.keys {
		ids = append(ids, id)
	}
	return ids
}

func (v *Vault) key(id string) ([]byte, bool) {
	k, ok := v.keys[id]
	return k, ok
}

// AddKey appends a freshly generated key with the given id to the key file
// at path, creating the file (mode 0600) if it does not exist. The new key
// becomes the active one. An id already in the file is refused.
func AddKey(path, id string) error {
	if err := checkKeyID(id); err != nil {
		return err
	}
	var existing []byte
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		v, err := parseVault(path, data)
		if err != nil {
			return err
		}
		if _, dup := v.keys[id]; dup {
			return fmt.Errorf("key vault %s: key id %q already exists", path, id)
		}
		existing = data
	case errors.Is(err, fs.ErrNotExist):
	default:
		return fmt.Errorf("key vault: %w", err)
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	out := append([]byte(nil), existing...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = fmt.Appendf(out, "%s %s\n", id, base64.StdEncoding.EncodeToString(key))
	// Write a sibling file and rename, so a crash never leaves a key file
	// with half a key, and the file is 0600 from its first byte.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".xp-vault-*")
	if err != nil {
		return fmt.Errorf("key vault: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("key vault: %w", err)
	}
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return fmt.Errorf("key vault: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("key vault: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("key vault: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("key vault: %w", err)
	}
	return nil
}
