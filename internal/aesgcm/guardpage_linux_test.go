package aesgcm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

// pageBeforeGuard maps a page followed by an inaccessible one and returns
// the readable page; a read or write past its end faults.
func pageBeforeGuard(t *testing.T) []byte {
	t.Helper()
	size := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	return mem[:size:size]
}

// TestBuffersEndingAtGuardPage puts plaintext, ciphertext and additional
// data flush against an unmapped page, so the assembly's masked loads and
// stores of partial blocks would fault if they touched a byte past the
// end.
func TestBuffersEndingAtGuardPage(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	page := pageBeforeGuard(t)
	adPage := pageBeforeGuard(t)
	for _, im := range impls(t) {
		for _, keyLen := range []int{16, 32} {
			t.Run(fmt.Sprintf("%s/AES-%d", im.name, keyLen*8), func(t *testing.T) {
				key := randBytes(r, keyLen)
				a, std := mustNew(t, im, key), stdGCM(t, key)
				for n := 0; n <= 600; n++ {
					nonce := randBytes(r, nonceSize)
					pt := randBytes(r, n)
					ad := adPage[len(adPage)-n%100:]
					copy(ad, randBytes(r, len(ad)))
					want := std.Seal(nil, nonce, pt, ad)

					// Plaintext at the page end, sealed into a fresh buffer.
					src := page[len(page)-n:]
					copy(src, pt)
					if got := a.Seal(nil, nonce, src, ad); !bytes.Equal(got, want) {
						t.Fatalf("len %d: Seal from the page end differs", n)
					}
					// Sealed message at the page end, opened in place.
					sealed := page[len(page)-len(want):]
					copy(sealed, want)
					got, err := a.Open(sealed[:0], nonce, sealed, ad)
					if err != nil || !bytes.Equal(got, pt) {
						t.Fatalf("len %d: in-place Open at the page end: %v", n, err)
					}
					// Sealed in place so that the tag ends at the page end.
					buf := page[len(page)-len(want):]
					copy(buf, pt)
					if got := a.Seal(buf[:0], nonce, buf[:n], ad); !bytes.Equal(got, want) {
						t.Fatalf("len %d: in-place Seal to the page end differs", n)
					}
				}
			})
		}
	}
}
