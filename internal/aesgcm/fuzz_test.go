package aesgcm

import (
	"bytes"
	"testing"
)

// FuzzAESGCM compares Seal and Open with crypto/cipher's GCM for fuzzed
// keys, nonces, messages and additional data, in both implementations,
// and SealTrailer (where offered) with Seal of the message and one byte.
func FuzzAESGCM(f *testing.F) {
	seed := func(keyLen, ptLen, adLen int) {
		key, nonce := make([]byte, keyLen), make([]byte, nonceSize)
		pt, ad := make([]byte, ptLen), make([]byte, adLen)
		for i := range key {
			key[i] = byte(i*7 + 1)
		}
		for i := range nonce {
			nonce[i] = byte(0xf0 + i)
		}
		for i := range pt {
			pt[i] = byte(i)
		}
		for i := range ad {
			ad[i] = byte(255 - i)
		}
		f.Add(key, nonce, pt, ad, false)
		f.Add(key, nonce, pt, ad, true)
	}
	for _, keyLen := range []int{16, 32} {
		for _, n := range []int{0, 1, 11, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1024, 1500, 4111} {
			seed(keyLen, n, n%37)
		}
	}
	seed(32, 0, 300)
	f.Fuzz(func(t *testing.T, keySeed, nonce, pt, ad []byte, long bool) {
		key := make([]byte, 16)
		if long {
			key = make([]byte, 32)
		}
		copy(key, keySeed)
		if len(nonce) != nonceSize {
			nonce = append(bytes.Clone(nonce), make([]byte, nonceSize)...)[:nonceSize]
		}
		std := stdGCM(t, key)
		want := std.Seal(nil, nonce, pt, ad)
		for _, im := range impls(t) {
			a := mustNew(t, im, key)
			if got := a.Seal(nil, nonce, pt, ad); !bytes.Equal(got, want) {
				t.Fatalf("%s Seal differs:\n got %x\nwant %x", im.name, got, want)
			}
			got, err := a.Open(nil, nonce, want, ad)
			if err != nil || !bytes.Equal(got, pt) {
				t.Fatalf("%s Open of crypto/cipher's ciphertext: %v", im.name, err)
			}
			if ts, ok := a.(TrailerSealer); ok && len(pt) > 0 {
				body, trailer := pt[:len(pt)-1], pt[len(pt)-1]
				if got := ts.SealTrailer(nil, nonce, body, trailer, ad); !bytes.Equal(got, want) {
					t.Fatalf("%s SealTrailer differs:\n got %x\nwant %x", im.name, got, want)
				}
			}
			if len(want) > 0 {
				bad := bytes.Clone(want)
				bad[len(pt)/2] ^= 0x40
				if _, err := a.Open(nil, nonce, bad, ad); err == nil {
					t.Fatalf("%s Open accepted a flipped byte", im.name)
				}
			}
		}
	})
}
