package crc32c

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

var sink uint32

func benchSizes(b *testing.B, sizes []int, impls []struct {
	name string
	f    func(uint32, []byte) uint32
}) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range sizes {
		// Offset by one byte: records inside a batch are not aligned.
		p := randomBytes(r, n+1)[1:]
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s/%s", impl.name, sizeName(n)), func(b *testing.B) {
				b.SetBytes(int64(n))
				crc := uint32(0)
				for b.Loop() {
					crc = impl.f(crc, p)
				}
				sink = crc
			})
		}
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// BenchmarkCRC32C compares hash/crc32 and this package side by side, so
// one run on a shared machine gives a fair ratio. 1000 B stands for a
// record, which is rarely a whole number of 64-byte blocks.
func BenchmarkCRC32C(b *testing.B) {
	benchSizes(b, []int{64, 1000, 1 << 10, 16 << 10, 1 << 20}, []struct {
		name string
		f    func(uint32, []byte) uint32
	}{
		{"stdlib", stdlib},
		{"crc32c", Update},
	})
}

// BenchmarkThreshold measures where the folding kernel overtakes
// hash/crc32, which sets foldThreshold.
func BenchmarkThreshold(b *testing.B) {
	if !useFold {
		b.Skip("no AVX-512 VPCLMULQDQ on this machine")
	}
	benchSizes(b, []int{64, 96, 128, 160, 192, 256, 384}, []struct {
		name string
		f    func(uint32, []byte) uint32
	}{
		{"stdlib", stdlib},
		{"kernel", updateFold},
	})
}
