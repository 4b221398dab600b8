package envelope

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func testVault(t testing.TB, ids ...string) (*Vault, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kek")
	if len(ids) == 0 {
		ids = []string{"k1"}
	}
	for _, id := range ids {
		if err := AddKey(path, id); err != nil {
			t.Fatal(err)
		}
	}
	v, err := OpenVault(path)
	if err != nil {
		t.Fatal(err)
	}
	return v, path
}

func TestRoundTrip(t *testing.T) {
	v, _ := testVault(t)
	k := NewKeyring(v, Options{})
	for _, tc := range []struct {
		name, topic, field string
		plaintext          []byte
	}{
		{"empty value", "t", "", nil},
		{"one byte", "t", "", []byte{0}},
		{"ssn field", "orders", "ssn", []byte(`"123-45-6789"`)},
		{"1 KiB value", "orders", "", bytes.Repeat([]byte("x"), 1024)},
		{"64 KiB value", "a.b-c_d", "", bytes.Repeat([]byte{0xff, 0}, 32<<10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := k.Sealer(tc.topic)
			env, err := s.Seal([]byte("prefix"), tc.field, tc.plaintext)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(env, []byte("prefix")) {
				t.Fatal("Seal did not append to dst")
			}
			env = env[len("prefix"):]
			if got, want := len(env), len(tc.plaintext)+Overhead(len(v.ActiveID())); got != want {
				t.Fatalf("envelope length %d, want %d", got, want)
			}
			if len(tc.plaintext) > 8 && bytes.Contains(env, tc.plaintext) {
				t.Fatal("plaintext visible in envelope")
			}
			// A fresh keyring over the same vault must open it: the
			// envelope alone (plus the KEK) is enough.
			o := NewKeyring(v, Options{}).Opener()
			got, err := o.Open([]byte("x"), tc.topic, tc.field, env)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[1:], tc.plaintext) || got[0] != 'x' {
				t.Fatalf("round trip: got %q", got)
			}
		})
	}
}

func TestDetectsMisuse(t *testing.T) {
	v, _ := testVault(t, "k1")
	k := NewKeyring(v, Options{})
	env, err := k.Sealer("orders").Seal(nil, "ssn", []byte(`"123-45-6789"`))
	if err != nil {
		t.Fatal(err)
	}
	otherVault := filepath.Join(t.TempDir(), "other")
	if err := AddKey(otherVault, "k2"); err != nil {
		t.Fatal(err)
	}
	ov, err := OpenVault(otherVault)
	if err != nil {
		t.Fatal(err)
	}
	// Same id, different key material: unwrapping must fail the tag.
	sameIDPath := filepath.Join(t.TempDir(), "same-id")
	if err := AddKey(sameIDPath, "k1"); err != nil {
		t.Fatal(err)
	}
	sv, err := OpenVault(sameIDPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		vault        *Vault
		topic, field string
		env          []byte
		want         error
	}{
		{"wrong topic", v, "orders2", "ssn", env, ErrAuth},
		{"wrong field", v, "orders", "ssn2", env, ErrAuth},
		{"whole value vs field", v, "orders", "", env, ErrAuth},
		{"missing KEK", ov, "orders", "ssn", env, ErrUnknownKEK},
		{"KEK id reused for other key", sv, "orders", "ssn", env, ErrAuth},
		{"truncated", v, "orders", "ssn", env[:len(env)-1], ErrAuth},
		{"too short", v, "orders", "ssn", env[:40], ErrMalformed},
		{"empty", v, "orders", "ssn", nil, ErrMalformed},
		{"version 2", v, "orders", "ssn", append([]byte{2}, env[1:]...), ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewKeyring(tc.vault, Options{}).Opener()
			out, err := o.Open([]byte("keep"), tc.topic, tc.field, tc.env)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
	// Every single-bit flip anywhere in the envelope is detected, whether
	// the data key is cached (same keyring) or unwrapped afresh.
	for _, cached := range []bool{true, false} {
		for i := range env {
			for bit := range 8 {
				bad := bytes.Clone(env)
				bad[i] ^= 1 << bit
				kr := k
				if !cached {
					kr = NewKeyring(v, Options{})
				}
				if _, err := kr.Opener().Open(nil, "orders", "ssn", bad); err == nil {
					t.Fatalf("flip of bit %d in byte %d (cached=%v) not detected", bit, i, cached)
				}
			}
		}
	}
}

// TestNonceUniqueness seals a million times from two goroutines, across
// count-based data key rotations, and checks no (data key, nonce) pair
// repeats.
func TestNonceUniqueness(t *testing.T) {
	v, _ := testVault(t)
	k := NewKeyring(v, Options{MaxEncryptions: 300_000})
	const per = 500_000
	type kn struct {
		dkID  [DataKeyIDSize]byte
		nonce [NonceSize]byte
	}
	res := make([][]kn, 2)
	var wg sync.WaitGroup
	for g := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := k.Sealer("t")
			buf := make([]byte, 0, 256)
			out := make([]kn, 0, per)
			for range per {
				env, err := s.Seal(buf[:0], "", nil)
				if err != nil {
					t.Error(err)
					return
				}
				h, _ := HeaderLen(env)
				var e kn
				copy(e.dkID[:], env[2+int(env[1]):])
				copy(e.nonce[:], env[h:])
				out = append(out, e)
			}
			res[g] = out
		}()
	}
	wg.Wait()
	all := append(res[0], res[1]...)
	if len(all) != 2*per {
		t.Fatalf("sealed %d, want %d", len(all), 2*per)
	}
	slices.SortFunc(all, func(a, b kn) int {
		if c := bytes.Compare(a.dkID[:], b.dkID[:]); c != 0 {
			return c
		}
		return bytes.Compare(a.nonce[:], b.nonce[:])
	})
	keys := 1
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("nonce repeated under one data key: %x", all[i].nonce)
		}
		if all[i].dkID != all[i-1].dkID {
			keys++
		}
	}
	// 1M encryptions at 300k per key need at least 4 data keys.
	if keys < 4 || k.Rotations() < 4 {
		t.Fatalf("%d data keys, %d rotations: count-based rotation did not happen", keys, k.Rotations())
	}
}

func TestRotationMidStream(t *testing.T) {
	v, path := testVault(t, "k1")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	k := NewKeyring(v, Options{MaxEncryptions: 10, MaxAge: time.Minute, Now: clock})
	s := k.Sealer("t")
	type sealed struct {
		env []byte
		pt  string
	}
	var all []sealed
	seal := func(n int) {
		for i := range n {
			pt := strings.Repeat("p", i)
			env, err := s.Seal(nil, "f", []byte(pt))
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, sealed{env, pt})
		}
	}
	header := func(env []byte) string { h, _ := HeaderLen(env); return string(env[:h]) }
	seal(25) // count rotation: 3 data keys
	if got := k.Rotations(); got != 3 {
		t.Fatalf("after 25 seals at 10 per key: %d keys, want 3", got)
	}
	before := header(all[len(all)-1].env)
	now = now.Add(2 * time.Minute)
	s.Reset("t")
	seal(1) // time rotation
	if header(all[len(all)-1].env) == before {
		t.Fatal("data key not rotated after MaxAge")
	}
	// KEK rotation: add a key, reload; new data keys name k2.
	if err := AddKey(path, "k2"); err != nil {
		t.Fatal(err)
	}
	if err := k.Reload(); err != nil {
		t.Fatal(err)
	}
	seal(5)
	last := all[len(all)-1].env
	if id := string(last[2 : 2+int(last[1])]); id != "k2" {
		t.Fatalf("after KEK rotation new data is under %q, want k2", id)
	}
	// Everything, old and new, opens with a fresh keyring over the vault.
	v2, err := OpenVault(path)
	if err != nil {
		t.Fatal(err)
	}
	o := NewKeyring(v2, Options{}).Opener()
	for i, s := range all {
		pt, err := o.Open(nil, "t", "f", s.env)
		if err != nil || string(pt) != s.pt {
			t.Fatalf("record %d: %v %q", i, err, pt)
		}
	}
}

func TestVaultErrors(t *testing.T) {
	dir := t.TempDir()
	key := "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=" // 32 bytes
	for _, tc := range []struct {
		name, content string
		mode          os.FileMode
		want          string
	}{
		{"ok", "# comment\n\nk1 " + key + "\n", 0o600, ""},
		{"readable by group", "k1 " + key + "\n", 0o640, "chmod 600"},
		{"empty", "# nothing\n", 0o600, "no keys"},
		{"short key", "k1 AAAA\n", 0o600, ":1: key \"k1\""},
		{"three fields", "k1 " + key + " x\n", 0o600, ":1: want `ID BASE64KEY`"},
		{"bad id", "k/1 " + key + "\n", 0o600, "only letters"},
		{"duplicate id", "k1 " + key + "\nk1 " + key + "\n", 0o600, ":2: key id \"k1\" appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			v, err := OpenVault(p)
			if tc.want == "" {
				if err != nil || v.ActiveID() != "k1" {
					t.Fatalf("OpenVault: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("AddKey writes 0600 and refuses duplicate ids", func(t *testing.T) {
		p := filepath.Join(dir, "new")
		if err := AddKey(p, "a"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("mode %v, err %v", fi.Mode(), err)
		}
		if err := AddKey(p, "a"); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("duplicate id: %v", err)
		}
		if err := AddKey(p, "b"); err != nil {
			t.Fatal(err)
		}
		v, err := OpenVault(p)
		if err != nil || v.ActiveID() != "b" || len(v.IDs()) != 2 {
			t.Fatalf("after rotation: %v %v", v, err)
		}
	})
}

func TestSealOpenAllocations(t *testing.T) {
	v, _ := testVault(t)
	k := NewKeyring(v, Options{})
	s, o := k.Sealer("t"), k.Opener()
	pt := bytes.Repeat([]byte("a"), 1024)
	env := make([]byte, 0, 2048)
	out := make([]byte, 0, 2048)
	allocs := testing.AllocsPerRun(1000, func() {
		e, err := s.Seal(env[:0], "f", pt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := o.Open(out[:0], "t", "f", e); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per seal+open, want 0", allocs)
	}
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "kek")
	if err := AddKey(path, "k1"); err != nil {
		f.Fatal(err)
	}
	v, err := OpenVault(path)
	if err != nil {
		f.Fatal(err)
	}
	k := NewKeyring(v, Options{})
	for _, pt := range []string{"", "x", `"123-45-6789"`} {
		env, _ := k.Sealer("t").Seal(nil, "f", []byte(pt))
		f.Add(env)
	}
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 255})
	o := k.Opener()
	f.Fuzz(func(t *testing.T, env []byte) {
		out, err := o.Open(nil, "t", "f", env)
		if err != nil && out != nil {
			t.Fatal("plaintext returned with an error")
		}
	})
}

// floor is raw AES-256-GCM seal+open of n bytes, for benchmarks.
func floor(b *testing.B, n int) {
	block, _ := aes.NewCipher(make([]byte, 32))
	g, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	pt := make([]byte, n)
	buf := make([]byte, 0, n+16)
	out := make([]byte, 0, n)
	b.SetBytes(int64(n))
	for b.Loop() {
		ct := g.Seal(buf[:0], nonce, pt, nil)
		if _, err := g.Open(out[:0], nonce, ct, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEnvelope(b *testing.B) {
	v, _ := testVault(b)
	k := NewKeyring(v, Options{})
	for _, n := range []int{11, 1024} {
		b.Run("floor/"+sizeName(n), func(b *testing.B) { floor(b, n) })
		b.Run("seal+open/"+sizeName(n), func(b *testing.B) {
			s, o := k.Sealer("t"), k.Opener()
			pt := make([]byte, n)
			buf := make([]byte, 0, n+200)
			out := make([]byte, 0, n)
			b.SetBytes(int64(n))
			for b.Loop() {
				e, _ := s.Seal(buf[:0], "f", pt)
				if _, err := o.Open(out[:0], "t", "f", e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	if n == 1024 {
		return "1KiB"
	}
	return "11B"
}
