package aesgcm

import (
	"fmt"
	"testing"
)

// BenchmarkAESGCM puts crypto/cipher's GCM ("std") and the VAES
// implementation side by side per key size, message size and direction,
// so one run on a shared machine compares them under the same load.
func BenchmarkAESGCM(b *testing.B) {
	nonce := make([]byte, nonceSize)
	ad := make([]byte, 13) // a TLS 1.3 record header's worth
	for _, dir := range []string{"seal", "open"} {
		for _, keyLen := range []int{16, 32} {
			for _, size := range []int{11, 1024, 16384} {
				for _, im := range impls(b) {
					name := fmt.Sprintf("%s/AES-%d/%s/%s", dir, keyLen*8, sizeName(size), im.name)
					b.Run(name, func(b *testing.B) {
						a := mustNew(b, im, make([]byte, keyLen))
						pt := make([]byte, size)
						buf := make([]byte, 0, size+tagSize)
						sealed := a.Seal(nil, nonce, pt, ad)
						b.SetBytes(int64(size))
						b.ReportAllocs()
						if dir == "seal" {
							for b.Loop() {
								buf = a.Seal(buf[:0], nonce, pt, ad)
							}
							return
						}
						for b.Loop() {
							var err error
							if buf, err = a.Open(buf[:0], nonce, sealed, ad); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
		}
	}
}

func sizeName(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%dKiB", n/1024)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkNew is the per-key cost (a TLS connection, an envelope data
// key): the VAES implementation also builds its table of 32 powers of H.
func BenchmarkNew(b *testing.B) {
	for _, keyLen := range []int{16, 32} {
		for _, im := range impls(b) {
			b.Run(fmt.Sprintf("AES-%d/%s", keyLen*8, im.name), func(b *testing.B) {
				key := make([]byte, keyLen)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := im.new(key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
