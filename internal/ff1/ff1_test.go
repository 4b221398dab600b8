package ff1

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

const alphabet36 = "0123456789abcdefghijklmnopqrstuvwxyz"

func numerals(t testing.TB, s string) []byte {
	t.Helper()
	out := make([]byte, len(s))
	for i := range s {
		k := strings.IndexByte(alphabet36, s[i])
		if k < 0 {
			t.Fatalf("%q: not a numeral", s)
		}
		out[i] = byte(k)
	}
	return out
}

func text(x []byte) string {
	var b strings.Builder
	for _, d := range x {
		b.WriteByte(alphabet36[d])
	}
	return b.String()
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nistSamples are the FF1 samples NIST publishes for SP 800-38G
// (FF1samples.pdf): three per AES key size.
var nistSamples = []struct {
	name, key, tweak, pt, ct string
	radix                    int
}{
	{"1 AES-128", "2B7E151628AED2A6ABF7158809CF4F3C", "", "0123456789", "2433477484", 10},
	{"2 AES-128", "2B7E151628AED2A6ABF7158809CF4F3C", "39383736353433323130", "0123456789", "6124200773", 10},
	{"3 AES-128", "2B7E151628AED2A6ABF7158809CF4F3C", "3737373770717273373737", "0123456789abcdefghi", "a9tv40mll9kdu509eum", 36},
	{"4 AES-192", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "", "0123456789", "2830668132", 10},
	{"5 AES-192", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "39383736353433323130", "0123456789", "2496655549", 10},
	{"6 AES-192", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F", "3737373770717273373737", "0123456789abcdefghi", "xbj3kv35jrawxv32ysr", 36},
	{"7 AES-256", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "", "0123456789", "6657667009", 10},
	{"8 AES-256", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "39383736353433323130", "0123456789", "1001623463", 10},
	{"9 AES-256", "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94", "3737373770717273373737", "0123456789abcdefghi", "xs8a0azh2avyalyzuwd", 36},
}

// slowCrypt runs a call on the math/big rounds whatever the size, so
// that the vectors check both paths.
func slowCrypt(c *Cipher, x []byte, radix int, tweak []byte, enc bool) {
	var w work
	w.init(c.block, radix, len(x), tweak)
	w.slow(x, enc)
}

func TestNISTSamples(t *testing.T) {
	for _, s := range nistSamples {
		t.Run(s.name, func(t *testing.T) {
			c, err := New(unhex(t, s.key))
			if err != nil {
				t.Fatal(err)
			}
			tweak := unhex(t, s.tweak)
			for _, path := range []string{"uint64", "big"} {
				x := numerals(t, s.pt)
				if path == "uint64" {
					err = c.Encrypt(x, s.radix, tweak)
				} else {
					slowCrypt(c, x, s.radix, tweak, true)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := text(x); got != s.ct {
					t.Errorf("%s encrypt: %s, want %s", path, got, s.ct)
				}
				if path == "uint64" {
					err = c.Decrypt(x, s.radix, tweak)
				} else {
					slowCrypt(c, x, s.radix, tweak, false)
				}
				if err != nil {
					t.Fatal(err)
				}
				if got := text(x); got != s.pt {
					t.Errorf("%s decrypt: %s, want %s", path, got, s.pt)
				}
			}
		})
	}
}

func TestDomain(t *testing.T) {
	for _, c := range []struct {
		radix, n int
		want     error
	}{
		{10, 6, nil}, {10, 5, ErrDomain}, {26, 5, nil}, {26, 4, ErrDomain},
		{2, 20, nil}, {2, 19, ErrDomain}, {256, 3, nil}, {256, 2, ErrDomain},
		{10, 1, ErrDomain}, {1, 30, ErrInput}, {257, 30, ErrInput}, {10, MaxLen + 1, ErrInput},
	} {
		if err := CheckDomain(c.radix, c.n); !errors.Is(err, c.want) {
			t.Errorf("CheckDomain(%d, %d) = %v, want %v", c.radix, c.n, err, c.want)
		}
	}
	c, _ := New(make([]byte, 32))
	x := []byte{1, 2, 3, 4, 5}
	if err := c.Encrypt(x, 10, nil); !errors.Is(err, ErrDomain) || !bytes.Equal(x, []byte{1, 2, 3, 4, 5}) {
		t.Errorf("5 digits: %v, %v; want ErrDomain and the input unchanged", err, x)
	}
	x = []byte{1, 2, 3, 4, 5, 10}
	if err := c.Encrypt(x, 10, nil); !errors.Is(err, ErrInput) {
		t.Errorf("numeral 10 in radix 10: %v, want ErrInput", err)
	}
	if _, err := New(make([]byte, 31)); err == nil {
		t.Error("a 31-byte key was accepted")
	}
}

// TestPathsAgree checks the uint64 rounds against the math/big ones on
// random strings up to the largest the uint64 path takes, across
// tweak lengths that end anywhere in a block, and round-trips strings
// long enough for the math/big path alone.
func TestPathsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(r.Uint32())
	}
	c, _ := New(key)
	for _, radix := range []int{2, 10, 26, 36, 62, 255} {
		for n := 2; n <= 130; n++ {
			if CheckDomain(radix, n) != nil {
				continue
			}
			tweak := make([]byte, r.IntN(40))
			for i := range tweak {
				tweak[i] = byte(r.Uint32())
			}
			x := make([]byte, n)
			for i := range x {
				x[i] = byte(r.IntN(radix))
			}
			fast := bytes.Clone(x)
			slow := bytes.Clone(x)
			if err := c.Encrypt(fast, radix, tweak); err != nil {
				t.Fatal(err)
			}
			slowCrypt(c, slow, radix, tweak, true)
			if !bytes.Equal(fast, slow) {
				t.Fatalf("radix %d n %d tweak %d: Encrypt %v, math/big rounds %v", radix, n, len(tweak), fast, slow)
			}
			if bytes.Equal(fast, x) && n > 8 {
				t.Fatalf("radix %d n %d: ciphertext equals plaintext", radix, n)
			}
			if err := c.Decrypt(fast, radix, tweak); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fast, x) {
				t.Fatalf("radix %d n %d: decrypt gave %v, want %v", radix, n, fast, x)
			}
		}
	}
}

func TestTweakMatters(t *testing.T) {
	c, _ := New(make([]byte, 32))
	a := numerals(t, "123456789")
	b := bytes.Clone(a)
	_ = c.Encrypt(a, 10, []byte("topic\x00ssn"))
	_ = c.Encrypt(b, 10, []byte("topic\x00tax"))
	if bytes.Equal(a, b) {
		t.Errorf("two tweaks gave one ciphertext %s", text(a))
	}
}

func TestNoAllocations(t *testing.T) {
	c, _ := New(make([]byte, 32))
	x := numerals(t, "123456789")
	tweak := []byte("payments\x00ssn")
	_ = c.Encrypt(x, 10, tweak)
	if n := testing.AllocsPerRun(100, func() { _ = c.Encrypt(x, 10, tweak) }); n != 0 {
		t.Errorf("Encrypt of 9 digits allocates %v times, want 0", n)
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("0123456789"), []byte{}, uint8(10))
	f.Add([]byte("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"), []byte("t\x00f"), uint8(26))
	c, _ := New(make([]byte, 32))
	f.Fuzz(func(t *testing.T, in, tweak []byte, r uint8) {
		radix := int(r)%255 + 2
		x := make([]byte, min(len(in), 300))
		for i := range x {
			x[i] = byte(int(in[i]) % radix)
		}
		orig := bytes.Clone(x)
		if err := c.Encrypt(x, radix, tweak); err != nil {
			if CheckDomain(radix, len(x)) == nil {
				t.Fatalf("radix %d n %d: %v", radix, len(x), err)
			}
			return
		}
		for _, d := range x {
			if int(d) >= radix {
				t.Fatalf("numeral %d out of radix %d", d, radix)
			}
		}
		if err := c.Decrypt(x, radix, tweak); err != nil || !bytes.Equal(x, orig) {
			t.Fatalf("round trip: %v %v, want %v", err, x, orig)
		}
	})
}
