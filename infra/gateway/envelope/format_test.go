package envelope

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func TestFormatKeys(t *testing.T) {
	v, path := testVault(t, "k1")
	a := NewKeyring(v, Options{})
	b := NewKeyring(v, Options{})
	enc := func(k *Keyring, kek, topic string) []byte {
		t.Helper()
		c, err := k.FormatKeyFor(kek, topic)
		if err != nil {
			t.Fatal(err)
		}
		x := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}
		if err := c.Encrypt(x, 10, nil); err != nil {
			t.Fatal(err)
		}
		return x
	}
	id, _, err := a.FormatKey("payments")
	if err != nil || id != "k1" {
		t.Fatalf("FormatKey: %q, %v; want k1", id, err)
	}
	// Two gateways over one vault derive one key per topic.
	if !bytes.Equal(enc(a, "k1", "payments"), enc(b, "k1", "payments")) {
		t.Error("two keyrings over one vault derive different keys")
	}
	if bytes.Equal(enc(a, "k1", "payments"), enc(a, "k1", "orders")) {
		t.Error("two topics share a key")
	}
	// Rotation: a new active KEK gives the topic a new key; the old one
	// still opens what it encrypted.
	before := enc(a, "k1", "payments")
	if err := AddKey(path, "k2"); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := a.FormatKey("payments"); id != "k2" {
		t.Fatalf("active key after rotation %q, want k2", id)
	}
	if bytes.Equal(enc(a, "k2", "payments"), before) {
		t.Error("the new KEK derives the old key")
	}
	if !bytes.Equal(enc(a, "k1", "payments"), before) {
		t.Error("k1's key changed with the rotation")
	}
	if _, err := a.FormatKeyFor("k9", "payments"); !errors.Is(err, ErrUnknownKEK) {
		t.Errorf("unknown KEK: %v, want ErrUnknownKEK", err)
	}
	// A KEK removed from the vault is forgotten on reload, even though
	// its key was derived before.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[1:], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.FormatKeyFor("k1", "payments"); !errors.Is(err, ErrUnknownKEK) {
		t.Errorf("removed KEK: %v, want ErrUnknownKEK", err)
	}
}
