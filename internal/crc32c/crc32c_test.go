package crc32c

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

func stdlib(crc uint32, p []byte) uint32 { return crc32.Update(crc, castagnoli, p) }

func randomBytes(r *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}

// withFallback runs f with the folding path off, restoring it after.
func withFallback(t *testing.T, f func()) {
	t.Helper()
	saved := useFold
	useFold = false
	t.Cleanup(func() { useFold = saved })
	f()
}

func TestKnownAnswers(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want uint32
	}{
		{"empty", nil, 0},
		{"check string", []byte("123456789"), 0xE3069283}, // the CRC-32C check value
		{"32 zeros", make([]byte, 32), 0x8A9136AA},        // RFC 3720 B.4
		{"32 ones", bytesOf(32, 0xFF), 0x62A8AB43},        // RFC 3720 B.4
		{"4 KiB zeros", make([]byte, 4096), stdlib(0, make([]byte, 4096))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Checksum(tc.in); got != tc.want {
				t.Errorf("Checksum = %#08x, want %#08x", got, tc.want)
			}
		})
	}
}

func bytesOf(n int, b byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = b
	}
	return p
}

// lengths covers every length to 2100 and big ones around the loops'
// strides.
func lengths() []int {
	var ns []int
	for n := 0; n <= 2100; n++ {
		ns = append(ns, n)
	}
	// Around whole mix blocks: one, two and three of them with every
	// remainder class of the loops after them.
	for blocks := 1; blocks <= 3; blocks++ {
		for rest := 0; rest < 600; rest += 7 {
			ns = append(ns, 256+blocks*mixBlock+rest)
		}
	}
	return append(ns, 4095, 4096, 4097, 65535, 65536, 65536+64+17, foldChunk, foldChunk+13, foldChunk+foldThreshold+5)
}

func checkAllLengths(t *testing.T, update func(uint32, []byte) uint32) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	buf := randomBytes(r, foldChunk+foldThreshold+5+8)
	for _, n := range lengths() {
		for _, off := range []int{0, 1, 3, 7} {
			p := buf[off : off+n]
			crc := r.Uint32()
			if n%5 == 0 {
				crc = 0
			}
			if got, want := update(crc, p), stdlib(crc, p); got != want {
				t.Fatalf("len %d offset %d crc %#08x: got %#08x, want %#08x", n, off, crc, got, want)
			}
		}
	}
}

func TestUpdateMatchesStdlib(t *testing.T) {
	checkAllLengths(t, Update)
}

// TestKernelMatchesStdlib drives the folding kernel below foldThreshold
// too, so its one-register path (1..255 bytes) is checked whatever the
// threshold.
func TestKernelMatchesStdlib(t *testing.T) {
	checkAllLengths(t, kernel(t))
}

// kernel is what the kernel tests drive: the folding kernel. On a CPU
// without it the test is skipped (TestFallbackMatchesStdlib covers the
// fallback there).
func kernel(t testing.TB) func(uint32, []byte) uint32 {
	t.Helper()
	if !useFold {
		t.Skip("CPU lacks AVX-512 VPCLMULQDQ: the folding kernel cannot run here")
	}
	return updateFold
}

func TestFallbackMatchesStdlib(t *testing.T) {
	withFallback(t, func() {
		if Accelerated() {
			t.Fatal("Accelerated() true with the folding path off")
		}
		checkAllLengths(t, Update)
	})
}

func TestChecksumIsUpdateFromZero(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 5, 300, 5000} {
		p := randomBytes(r, n)
		if got, want := Checksum(p), crc32.Checksum(p, castagnoli); got != want {
			t.Errorf("len %d: Checksum = %#08x, want %#08x", n, got, want)
		}
	}
}

// Kafka's rewriter checksums a batch piecewise; any split must agree with
// the one-shot CRC.
func TestIncrementalUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := randomBytes(r, 70000)
	want := stdlib(0, p)
	for i := 0; i < 300; i++ {
		crc := uint32(0)
		rest := p
		for len(rest) > 0 {
			var n int
			switch r.IntN(3) {
			case 0:
				n = r.IntN(64)
			case 1:
				n = r.IntN(2048)
			default:
				n = r.IntN(20000)
			}
			n = min(n, len(rest))
			crc = Update(crc, rest[:n])
			rest = rest[n:]
		}
		if crc != want {
			t.Fatalf("split %d: got %#08x, want %#08x", i, crc, want)
		}
	}
}

func TestDoesNotWriteInput(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := randomBytes(r, 5000)
	saved := append([]byte(nil), p...)
	Update(0x12345678, p)
	if string(p) != string(saved) {
		t.Fatal("Update changed its input")
	}
}

func FuzzCRC32C(f *testing.F) {
	r := rand.New(rand.NewPCG(9, 10))
	f.Add(uint32(0), []byte{})
	f.Add(uint32(0), []byte("123456789"))
	f.Add(uint32(0xFFFFFFFF), randomBytes(r, foldThreshold-1))
	f.Add(uint32(7), randomBytes(r, foldThreshold))
	f.Add(uint32(0xFFFFFFFF), randomBytes(r, 255))
	f.Add(uint32(0x82F63B78), randomBytes(r, 256))
	f.Add(uint32(1), randomBytes(r, 257))
	f.Add(uint32(0xdeadbeef), randomBytes(r, 1024+77))
	f.Add(uint32(42), randomBytes(r, 5000))
	f.Add(uint32(43), randomBytes(r, 1024+512+256+64+63)) // every loop once
	f.Fuzz(func(t *testing.T, crc uint32, p []byte) {
		want := stdlib(crc, p)
		if got := Update(crc, p); got != want {
			t.Fatalf("Update(%#08x, %d bytes) = %#08x, want %#08x", crc, len(p), got, want)
		}
		if useFold {
			if got := updateFold(crc, p); got != want {
				t.Fatalf("kernel(%#08x, %d bytes) = %#08x, want %#08x", crc, len(p), got, want)
			}
		}
	})
}
