package aesgcm

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// impl is one way of building the AEAD under test.
type impl struct {
	name string
	new  func(key []byte) (cipher.AEAD, error)
}

// impls are the implementations every comparison runs against: the VAES
// one when this CPU has it, and always the fallback.
func impls(t testing.TB) []impl {
	t.Helper()
	out := []impl{{"std", func(k []byte) (cipher.AEAD, error) { return newAEAD(k, false) }}}
	if cpuHasVAES {
		out = append(out, impl{"vaes", func(k []byte) (cipher.AEAD, error) { return newAEAD(k, true) }})
	} else {
		t.Logf("CPU lacks VAES/AVX-512: only the fallback is tested")
	}
	return out
}

func stdGCM(t testing.TB, key []byte) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustNew(t testing.TB, im impl, key []byte) cipher.AEAD {
	t.Helper()
	a, err := im.new(key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkAgainstStd seals and opens one message with a and with the
// standard library and fails on any difference, in every buffer layout
// cipher.AEAD allows: fresh dst, dst with a prefix, and in place.
func checkAgainstStd(t *testing.T, a, std cipher.AEAD, nonce, pt, ad []byte) {
	t.Helper()
	want := std.Seal(nil, nonce, pt, ad)
	got := a.Seal(nil, nonce, pt, ad)
	if !bytes.Equal(got, want) {
		t.Fatalf("Seal(len %d, ad %d) differs from crypto/cipher:\n got %x\nwant %x", len(pt), len(ad), got, want)
	}

	prefix := []byte("prefix")
	got = a.Seal(slices.Clip(prefix), nonce, pt, ad)
	if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("Seal with prefix (len %d, ad %d) wrong", len(pt), len(ad))
	}

	buf := make([]byte, len(pt), len(pt)+tagSize)
	copy(buf, pt)
	got = a.Seal(buf[:0], nonce, buf, ad)
	if !bytes.Equal(got, want) || &got[0] != &buf[:1][0] {
		t.Fatalf("in-place Seal (len %d, ad %d) wrong or reallocated", len(pt), len(ad))
	}

	opened, err := a.Open(nil, nonce, want, ad)
	if err != nil || !bytes.Equal(opened, pt) {
		t.Fatalf("Open of crypto/cipher's ciphertext (len %d, ad %d): err %v, match %v", len(pt), len(ad), err, bytes.Equal(opened, pt))
	}
	opened, err = a.Open(slices.Clip(prefix), nonce, want, ad)
	if err != nil || !bytes.Equal(opened[:len(prefix)], prefix) || !bytes.Equal(opened[len(prefix):], pt) {
		t.Fatalf("Open with prefix (len %d, ad %d): err %v", len(pt), len(ad), err)
	}
	ct := bytes.Clone(want)
	opened, err = a.Open(ct[:0], nonce, ct, ad)
	if err != nil || !bytes.Equal(opened, pt) {
		t.Fatalf("in-place Open (len %d, ad %d): err %v", len(pt), len(ad), err)
	}
}

func TestMatchesStdAllShortLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/AES-%d", im.name, keyLen*8), func(t *testing.T) {
				key := randBytes(r, keyLen)
				a, std := mustNew(t, im, key), stdGCM(t, key)
				for n := 0; n <= 1100; n++ {
					nonce := randBytes(r, nonceSize)
					ad := randBytes(r, n%71)
					checkAgainstStd(t, a, std, nonce, randBytes(r, n), ad)
				}
			})
		}
	}
}

func TestMatchesStdAdditionalDataLengths(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	adLens := []int{}
	for n := 0; n <= 70; n++ {
		adLens = append(adLens, n)
	}
	adLens = append(adLens, 255, 256, 257, 1000, 4096, 65537)
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/AES-%d", im.name, keyLen*8), func(t *testing.T) {
				key := randBytes(r, keyLen)
				a, std := mustNew(t, im, key), stdGCM(t, key)
				for _, adLen := range adLens {
					for _, n := range []int{0, 1, 16, 33, 300} {
						checkAgainstStd(t, a, std, randBytes(r, nonceSize), randBytes(r, n), randBytes(r, adLen))
					}
				}
			})
		}
	}
}

func TestMatchesStdLargeMessages(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/AES-%d", im.name, keyLen*8), func(t *testing.T) {
				key := randBytes(r, keyLen)
				a, std := mustNew(t, im, key), stdGCM(t, key)
				for _, n := range []int{4095, 4096, 16383, 16384, 16385, 16400, 65537, 1 << 20} {
					checkAgainstStd(t, a, std, randBytes(r, nonceSize), randBytes(r, n), randBytes(r, n%29))
				}
			})
		}
	}
}

// TestSealTrailer checks SealTrailer(p, t) against std's Seal of p
// followed by t at every length to 1,100 bytes and around the 16 KiB TLS
// record and the 64 KiB bulk chunk, appended after a prefix and in place
// (the trailer's byte then lies past p's length); the fallback does not
// offer it, so callers take their copying path there.
func TestSealTrailer(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	lengths := []int{16383, 16384, 16385, 65535, 65536, 65537, 70000}
	for n := 0; n <= 1100; n++ {
		lengths = append(lengths, n)
	}
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			key := randBytes(r, keyLen)
			ts, ok := mustNew(t, im, key).(TrailerSealer)
			if im.name == "std" {
				if ok {
					t.Fatal("the fallback offers SealTrailer")
				}
				continue
			}
			if !ok {
				t.Fatalf("%s does not offer SealTrailer", im.name)
			}
			std := stdGCM(t, key)
			for i, n := range lengths {
				nonce, pt, trailer := randBytes(r, nonceSize), randBytes(r, n), byte(r.Uint32())
				ad := randBytes(r, []int{0, 5, 13, 300}[i%4])
				want := std.Seal(nil, nonce, append(slices.Clone(pt), trailer), ad)
				prefix := []byte("prefix")
				got := ts.SealTrailer(slices.Clip(prefix), nonce, pt, trailer, ad)
				if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
					t.Fatalf("%s/AES-%d: SealTrailer of %d bytes (ad %d) differs from Seal", im.name, keyLen*8, n, len(ad))
				}
				buf := make([]byte, n, n+1+tagSize)
				copy(buf, pt)
				if got := ts.SealTrailer(buf[:0], nonce, buf, trailer, ad); !bytes.Equal(got, want) || &got[0] != &buf[:1][0] {
					t.Fatalf("%s/AES-%d: in-place SealTrailer of %d bytes (ad %d) differs from Seal", im.name, keyLen*8, n, len(ad))
				}
			}
			mustPanic(t, im.name+" SealTrailer with an 8-byte nonce", func() { ts.SealTrailer(nil, make([]byte, 8), nil, 0, nil) })
			buf := make([]byte, 200)
			mustPanic(t, im.name+" SealTrailer with output one byte into its input", func() { ts.SealTrailer(buf[1:1], make([]byte, nonceSize), buf[:100], 0, nil) })
		}
	}
}

// TestCounterLowWordCarry uses nonces ending in 0xff bytes: the 32-bit
// counter is the only part that changes and must not carry into the
// nonce. (It cannot wrap with a 12-byte nonce below 64 GiB.)
func TestCounterLowWordCarry(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, im := range impls(t) {
		key := randBytes(r, 32)
		a, std := mustNew(t, im, key), stdGCM(t, key)
		nonce := bytes.Repeat([]byte{0xff}, nonceSize)
		checkAgainstStd(t, a, std, nonce, randBytes(r, 70000), nil)
	}
}

// TestNISTVectors are test cases 2-4 and 14-16 of McGrew and Viega, "The
// Galois/Counter Mode of Operation (GCM)", with 96-bit IVs.
func TestNISTVectors(t *testing.T) {
	const (
		pt60 = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
		pt64 = pt60 + "1aafd255"
		ad   = "feedfacedeadbeeffeedfacedeadbeefabaddad2"
	)
	tests := []struct {
		name, key, nonce, pt, ad, ct, tag string
	}{
		{"case2", "00000000000000000000000000000000", "000000000000000000000000",
			"00000000000000000000000000000000", "",
			"0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"},
		{"case3", "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", pt64, "",
			"42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
			"4d5c2af327cd64a62cf35abd2ba6fab4"},
		{"case4", "feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", pt60, ad,
			"42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091",
			"5bc94fbc3221a5db94fae95ae7121a47"},
		{"case14", "0000000000000000000000000000000000000000000000000000000000000000", "000000000000000000000000",
			"00000000000000000000000000000000", "",
			"cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"},
		{"case15", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", pt64, "",
			"522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
			"b094dac5d93471bdec1a502270e3cc6c"},
		{"case16", "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", "cafebabefacedbaddecaf888", pt60, ad,
			"522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
			"76fc6ece0f4e1768cddf8853bb2d551b"},
	}
	for _, im := range impls(t) {
		for _, tc := range tests {
			t.Run(im.name+"/"+tc.name, func(t *testing.T) {
				a := mustNew(t, im, unhex(t, tc.key))
				nonce, pt, ad := unhex(t, tc.nonce), unhex(t, tc.pt), unhex(t, tc.ad)
				want := unhex(t, tc.ct+tc.tag)
				if got := a.Seal(nil, nonce, pt, ad); !bytes.Equal(got, want) {
					t.Fatalf("Seal:\n got %x\nwant %x", got, want)
				}
				got, err := a.Open(nil, nonce, want, ad)
				if err != nil || !bytes.Equal(got, pt) {
					t.Fatalf("Open: %v", err)
				}
			})
		}
	}
}

func TestOpenRejectsTampering(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/AES-%d", im.name, keyLen*8), func(t *testing.T) {
				a := mustNew(t, im, randBytes(r, keyLen))
				for _, n := range []int{0, 1, 15, 16, 17, 64, 255, 256, 300} {
					nonce, pt, ad := randBytes(r, nonceSize), randBytes(r, n), randBytes(r, 20)
					sealed := a.Seal(nil, nonce, pt, ad)
					for i := range sealed { // every byte of ciphertext and tag
						bad := bytes.Clone(sealed)
						bad[i] ^= 1 << (i % 8)
						if _, err := a.Open(nil, nonce, bad, ad); !errors.Is(err, openError(a)) {
							t.Fatalf("len %d: flipped sealed byte %d: err %v", n, i, err)
						}
					}
					for i := range nonce {
						bad := bytes.Clone(nonce)
						bad[i] ^= 0x80
						if _, err := a.Open(nil, bad, sealed, ad); err == nil {
							t.Fatalf("len %d: flipped nonce byte %d accepted", n, i)
						}
					}
					for i := range ad {
						bad := bytes.Clone(ad)
						bad[i] ^= 0x02
						if _, err := a.Open(nil, nonce, sealed, bad); err == nil {
							t.Fatalf("len %d: flipped ad byte %d accepted", n, i)
						}
					}
					if _, err := a.Open(nil, nonce, sealed, ad[:len(ad)-1]); err == nil {
						t.Fatalf("len %d: shortened ad accepted", n)
					}
					if _, err := a.Open(nil, nonce, sealed[:len(sealed)-1], ad); err == nil {
						t.Fatalf("len %d: truncated message accepted", n)
					}
					if _, err := a.Open(nil, nonce, sealed[:tagSize-1], ad); err == nil {
						t.Fatalf("shorter than a tag accepted")
					}
				}
			})
		}
	}
}

// openError returns the error a's Open gives on a bad tag, so the test
// checks that tampering fails with that error and not another.
func openError(a cipher.AEAD) error {
	_, err := a.Open(nil, make([]byte, nonceSize), make([]byte, tagSize), nil)
	return err
}

// TestFailedOpenClearsOutput checks what crypto/cipher does: after a bad
// tag, in-place Open leaves zeros, and Open with a dst returns nil and no
// plaintext in dst's spare capacity.
func TestFailedOpenClearsOutput(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, im := range impls(t) {
		a := mustNew(t, im, randBytes(r, 32))
		for _, n := range []int{16, 100, 256, 300, 1024, 5000} {
			nonce, pt := randBytes(r, nonceSize), randBytes(r, n)
			sealed := a.Seal(nil, nonce, pt, nil)
			sealed[len(sealed)-1] ^= 1

			buf := bytes.Clone(sealed)
			out, err := a.Open(buf[:0], nonce, buf, nil)
			if err == nil || out != nil {
				t.Fatalf("%s/%d: tampered in-place Open returned %v, %d bytes", im.name, n, err, len(out))
			}
			if !bytes.Equal(buf[:n], make([]byte, n)) {
				t.Fatalf("%s/%d: failed in-place Open left non-zero bytes", im.name, n)
			}

			dst := make([]byte, 3, n+200)
			out, err = a.Open(dst, nonce, sealed, nil)
			if err == nil || out != nil {
				t.Fatalf("%s/%d: tampered Open returned %v", im.name, n, err)
			}
			if !bytes.Equal(dst[3:cap(dst)], make([]byte, cap(dst)-3)) {
				t.Fatalf("%s/%d: failed Open left bytes in dst's capacity", im.name, n)
			}
		}
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not panic", what)
		}
	}()
	f()
}

func TestMisusePanics(t *testing.T) {
	for _, im := range impls(t) {
		a := mustNew(t, im, make([]byte, 16))
		nonce := make([]byte, nonceSize)
		mustPanic(t, im.name+" Seal with an 8-byte nonce", func() { a.Seal(nil, nonce[:8], nil, nil) })
		mustPanic(t, im.name+" Seal with a 16-byte nonce", func() { a.Seal(nil, make([]byte, 16), nil, nil) })
		mustPanic(t, im.name+" Open with an 11-byte nonce", func() { _, _ = a.Open(nil, nonce[:11], make([]byte, 32), nil) })

		buf := make([]byte, 200)
		mustPanic(t, im.name+" Seal with output one byte into its input", func() { a.Seal(buf[1:1], nonce, buf[:100], nil) })
		mustPanic(t, im.name+" Seal with input one byte into its output", func() { a.Seal(buf[:0], nonce, buf[1:101], nil) })
		mustPanic(t, im.name+" Seal with output over the additional data", func() { a.Seal(buf[:0], nonce, buf[:50], buf[60:70]) })
		sealed := a.Seal(nil, nonce, make([]byte, 100), nil)
		copy(buf, sealed)
		mustPanic(t, im.name+" Open with output one byte into its input", func() { _, _ = a.Open(buf[1:1], nonce, buf[:len(sealed)], nil) })
		mustPanic(t, im.name+" Open with output over the additional data", func() { _, _ = a.Open(buf[:0], nonce, buf[:len(sealed)], buf[50:60]) })
	}
}

func TestNewRejectsKeySizes(t *testing.T) {
	for _, n := range []int{0, 8, 15, 17, 24, 31, 33, 64} {
		for _, vaes := range []bool{false, cpuHasVAES} {
			_, err := newAEAD(make([]byte, n), vaes)
			var kse KeySizeError
			if !errors.As(err, &kse) || int(kse) != n {
				t.Errorf("key of %d bytes (vaes %v): err %v, want KeySizeError(%d)", n, vaes, err, n)
			}
		}
	}
	a, err := New(make([]byte, 32))
	if err != nil || a.NonceSize() != nonceSize || a.Overhead() != tagSize {
		t.Fatalf("New(32-byte key): %v", err)
	}
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		env      string
		wantVAES bool // on a CPU with VAES
		wantErr  string
	}{
		{"", true, ""},
		{"auto", true, ""},
		{"std", false, ""},
		{"vaes", true, ""},
		{"STD", false, `XP_AESGCM="STD": want auto, std or vaes`},
		{"fast", false, `XP_AESGCM="fast": want auto, std or vaes`},
		{"0", false, `XP_AESGCM="0": want auto, std or vaes`},
	} {
		t.Run("XP_AESGCM="+tc.env, func(t *testing.T) {
			im, err := Select(tc.env)
			if tc.env == "vaes" && !cpuHasVAES {
				if err == nil || !strings.Contains(err.Error(), "lacks VAES") {
					t.Fatalf("Select(vaes) on a CPU without VAES: %v, want an error", err)
				}
				return
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Select(%q) = %v, %v; want error %q", tc.env, im.Name, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantVAES := tc.wantVAES && cpuHasVAES
			a, err := im.New(make([]byte, 16))
			if err != nil {
				t.Fatal(err)
			}
			if isVAES(a) != wantVAES || (im.Name == NameVAES) != wantVAES {
				t.Errorf("Select(%q): %s, VAES AEAD %v; want VAES %v", tc.env, im.Name, isVAES(a), wantVAES)
			}
			if (im.Why == "") != wantVAES {
				t.Errorf("Select(%q): why %q", tc.env, im.Why)
			}
		})
	}
	a, err := New(make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	if isVAES(a) != cpuHasVAES || Accelerated() != cpuHasVAES {
		t.Fatalf("New returned VAES %v, Accelerated %v, CPU support %v", isVAES(a), Accelerated(), cpuHasVAES)
	}
}

func TestConcurrentUse(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, im := range impls(t) {
		key := randBytes(r, 32)
		a, std := mustNew(t, im, key), stdGCM(t, key)
		type job struct{ nonce, pt, want []byte }
		jobs := make([]job, 64)
		for i := range jobs {
			nonce, pt := randBytes(r, nonceSize), randBytes(r, i*37)
			jobs[i] = job{nonce, pt, std.Seal(nil, nonce, pt, nil)}
		}
		errs := make(chan error, 4)
		for w := range 4 {
			go func() {
				for round := range 50 {
					j := jobs[(w*7+round)%len(jobs)]
					if got := a.Seal(nil, j.nonce, j.pt, nil); !bytes.Equal(got, j.want) {
						errs <- fmt.Errorf("worker %d: Seal mismatch", w)
						return
					}
					if got, err := a.Open(nil, j.nonce, j.want, nil); err != nil || !bytes.Equal(got, j.pt) {
						errs <- fmt.Errorf("worker %d: Open: %v", w, err)
						return
					}
				}
				errs <- nil
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestHashKeyMatchesAES checks our key schedule and block encryption
// against crypto/aes through the hash key H = E(K, 0) and one more block,
// for many keys of both sizes.
func TestHashKeyMatchesAES(t *testing.T) {
	if !cpuHasVAES {
		t.Skip("CPU lacks VAES/AVX-512: nothing of ours to compare")
	}
	r := rand.New(rand.NewPCG(15, 16))
	for i := range 200 {
		key := randBytes(r, 16+16*(i%2))
		block, err := aes.NewCipher(key)
		if err != nil {
			t.Fatal(err)
		}
		var in, got, want [16]byte
		copy(in[:], randBytes(r, 16))
		block.Encrypt(want[:], in[:])
		encryptBlockForTest(key, &got, &in)
		if got != want {
			t.Fatalf("key %x: block %x encrypts to %x, crypto/aes says %x", key, in, got, want)
		}
	}
}
