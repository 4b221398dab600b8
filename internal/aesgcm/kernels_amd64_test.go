package aesgcm

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// refCTR is GCM's CTR keystream XOR src from counter block ctr with the
// 32-bit increment, block by block through crypto/aes.
func refCTR(t *testing.T, key []byte, ctr [16]byte, src []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(src))
	var ks [16]byte
	for i := 0; i < len(src); i += 16 {
		block.Encrypt(ks[:], ctr[:])
		for j := i; j < min(i+16, len(src)); j++ {
			out[j] = src[j] ^ ks[j-i]
		}
		binary.BigEndian.PutUint32(ctr[12:], binary.BigEndian.Uint32(ctr[12:])+1)
	}
	return out
}

// TestKernelsCounterWrap runs the CTR and stitched kernels from counters
// just below 2^32: GCM's counter wraps within its last 32 bits and never
// carries into the nonce. (Seal cannot get there with a 12-byte nonce,
// which starts the counter at 2 and allows 2^32-2 blocks; the kernels
// must still be exact for every counter they are handed.)
func TestKernelsCounterWrap(t *testing.T) {
	if !cpuHasVAES {
		t.Skip("CPU lacks VAES/AVX-512: nothing of ours to test")
	}
	r := rand.New(rand.NewPCG(23, 24))
	for _, keyLen := range []int{16, 32} {
		key := randBytes(r, keyLen)
		g := newVAES(key).(*vaesGCM)
		for _, start := range []uint32{2, 0xffffffff - 40, 0xffffffff - 3, 0xffffffff} {
			for _, n := range []int{1, 15, 16, 63, 64, 65, 200, 255, 256, 512, 768, 1024, 4096 + 256} {
				t.Run(fmt.Sprintf("AES-%d/%#x/%d", keyLen*8, start, n), func(t *testing.T) {
					var ctr [16]byte
					copy(ctr[:12], randBytes(r, 12))
					binary.BigEndian.PutUint32(ctr[12:], start)
					src := randBytes(r, n)
					want := refCTR(t, key, ctr, src)

					got := make([]byte, n)
					ctrXor(&g.ks, g.rounds, &ctr, &got[0], &src[0], n)
					if !bytes.Equal(got, want) {
						t.Fatalf("ctrXor differs from the reference")
					}
					if n%256 != 0 {
						return
					}
					var wantX [16]byte
					ghashUpdate(&g.gtab[gtabH16], &wantX, &want[0], n)

					var x [16]byte
					sealBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &got[0], &src[0], n)
					if !bytes.Equal(got, want) || x != wantX {
						t.Fatalf("sealBulk: ciphertext equal %v, GHASH equal %v", bytes.Equal(got, want), x == wantX)
					}
					x = [16]byte{}
					inPlace := bytes.Clone(want)
					openBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &inPlace[0], &inPlace[0], n)
					if !bytes.Equal(inPlace, src) || x != wantX {
						t.Fatalf("openBulk in place: plaintext equal %v, GHASH equal %v", bytes.Equal(inPlace, src), x == wantX)
					}
				})
			}
		}
	}
}

// BenchmarkKernels times the assembly kernels alone on 16 KiB: the
// stitched seal and open loops beside CTR and GHASH on their own, to tell
// which one limits when tuning.
func BenchmarkKernels(b *testing.B) {
	if !cpuHasVAES {
		b.Skip("CPU lacks VAES/AVX-512")
	}
	const size = 16384
	for _, keyLen := range []int{16, 32} {
		g := newVAES(make([]byte, keyLen)).(*vaesGCM)
		buf := make([]byte, size)
		var ctr, x [16]byte
		kernels := []struct {
			name string
			run  func()
		}{
			{"sealBulk", func() { sealBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &buf[0], &buf[0], size) }},
			{"openBulk", func() { openBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &buf[0], &buf[0], size) }},
			{"ctrXor", func() { ctrXor(&g.ks, g.rounds, &ctr, &buf[0], &buf[0], size) }},
			{"ghashUpdate", func() { ghashUpdate(&g.gtab[gtabH16], &x, &buf[0], size) }},
		}
		for _, k := range kernels {
			b.Run(fmt.Sprintf("AES-%d/%s", keyLen*8, k.name), func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					k.run()
				}
			})
		}
	}
}
