package aesgcm

import (
	"fmt"
	"testing"
)

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
