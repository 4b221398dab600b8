package crc32c

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"testing"
)

func TestXPowModP(t *testing.T) {
	tests := []struct {
		name string
		k    int
		want uint32
	}{
		{"one", 0, 1},
		{"below degree", 31, 1 << 31},
		{"x^32 is the polynomial's low terms", 32, poly},
		{"x^35 still shifts", 35, poly << 3},                        // poly's top set bit is 28
		{"x^36 reduces again", 36, (poly << 4 & 0xFFFFFFFF) ^ poly}, // poly<<3 has bit 31 set
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := xPowModP(tc.k); got != tc.want {
				t.Errorf("xPowModP(%d) = %#08x, want %#08x", tc.k, got, tc.want)
			}
		})
	}
}

// A message whose only set bit is the first (bit 0 of byte 0 in the
// reflected convention) is x^(8n-1); its CRC register from zero is
// x^(8n-1)·x^32 mod P, bit-reversed. hash/crc32 thus checks xPowModP
// independently for every exponent the kernel uses and more.
func TestXPowModPAgainstCRC(t *testing.T) {
	for n := 1; n <= 300; n++ {
		msg := make([]byte, n)
		msg[0] = 1
		register := ^crc32.Update(^uint32(0), castagnoli, msg)
		if got := bits.Reverse32(xPowModP(8*n + 31)); got != register {
			t.Fatalf("n=%d: reflected x^%d mod P = %#08x, CRC register %#08x", n, 8*n+31, got, register)
		}
	}
}

func TestXPowModPMultiplies(t *testing.T) {
	// x^(a+b) = x^a · x^b mod P, with the product reduced by hand.
	mulMod := func(a, b uint32) uint32 {
		var r uint32
		for i := 31; i >= 0; i-- {
			carry := r >> 31
			r <<= 1
			if carry != 0 {
				r ^= poly
			}
			if b>>uint(i)&1 != 0 {
				r ^= a
			}
		}
		return r
	}
	for _, ab := range [][2]int{{2111, 0}, {1000, 1111}, {447, 2047}, {31, 32}, {64, 64}} {
		a, b := ab[0], ab[1]
		if got, want := mulMod(xPowModP(a), xPowModP(b)), xPowModP(a+b); got != want {
			t.Errorf("x^%d·x^%d = %#08x, x^%d = %#08x", a, b, got, a+b, want)
		}
	}
}

func TestFoldConstLayout(t *testing.T) {
	// x^0 is the top bit of the lane; x^31 is bit 32; the low half is zero.
	if got := foldConst(0); got != 1<<63 {
		t.Errorf("foldConst(0) = %#016x, want bit 63", got)
	}
	if got := foldConst(31); got != 1<<32 {
		t.Errorf("foldConst(31) = %#016x, want bit 32", got)
	}
	for _, d := range []int{128, 256, 384, 512, 1024, 1536, 2048} {
		p := foldPair(d)
		if p[0] != foldConst(d+63) || p[1] != foldConst(d-1) || p[0]&0xffffffff != 0 || p[1]&0xffffffff != 0 {
			t.Errorf("foldPair(%d) = %#x", d, p)
		}
	}
	if k := makeFoldConsts(); k.lanes[6] != 0 || k.lanes[7] != 0 {
		t.Errorf("last lane constants = %#x %#x, want zero", k.lanes[6], k.lanes[7])
	}
}

// clmul is a carry-less multiply of two 64-bit lanes, returning the
// 128-bit product as (low, high) qwords like PCLMULQDQ.
func clmul(a, b uint64) (lo, hi uint64) {
	for i := range 64 {
		if b>>uint(i)&1 != 0 {
			lo ^= a << uint(i)
			if i > 0 {
				hi ^= a >> uint(64-i)
			}
		}
	}
	return lo, hi
}

// register is the CRC register (not inverted) after p from a zero register.
func register(p []byte) uint32 { return ^crc32.Update(^uint32(0), castagnoli, p) }

func TestClmul(t *testing.T) {
	// (x+1)·(x+1) = x^2+1; x^63·x^63 = x^126.
	if lo, hi := clmul(3, 3); lo != 5 || hi != 0 {
		t.Errorf("clmul(3, 3) = %#x %#x", lo, hi)
	}
	if lo, hi := clmul(1<<63, 1<<63); lo != 0 || hi != 1<<62 {
		t.Errorf("clmul(2^63, 2^63) = %#x %#x", lo, hi)
	}
}

// A 128-bit block folded by foldPair(8·d) must stand for the block followed
// by d zero bytes: the same CRC register, whatever the block.
func TestFoldPairModel(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, d := range []int{16, 48, 64, 128, 192, 256, 3*mixStream + 256} {
		k := foldPair(8 * d)
		for range 50 {
			a0, a1 := r.Uint64(), r.Uint64()
			lo0, hi0 := clmul(a0, k[0])
			lo1, hi1 := clmul(a1, k[1])
			folded := binary.LittleEndian.AppendUint64(nil, lo0^lo1)
			folded = binary.LittleEndian.AppendUint64(folded, hi0^hi1)
			block := binary.LittleEndian.AppendUint64(nil, a0)
			block = binary.LittleEndian.AppendUint64(block, a1)
			if got, want := register(folded), register(append(block, make([]byte, d)...)); got != want {
				t.Fatalf("d=%d: folded register %#08x, block then zeros %#08x", d, got, want)
			}
		}
	}
}

// shiftConst's multiply-then-CRC32Q, done in Go, must turn a region's
// register into the 32 bits that stand for the region `after` bytes on.
func TestShiftConstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, after := range []int{9, 64, mixStream + 256*mixIters, 2*mixStream + 256*mixIters} {
		k := shiftConst(after)
		if k[1] != 0 || k[0]>>32 != 0 {
			t.Fatalf("shiftConst(%d) = %#x: not in the low dword", after, k)
		}
		for _, n := range []int{1, 8, 100, mixStream} {
			region := make([]byte, n)
			for i := range region {
				region[i] = byte(r.Uint32())
			}
			lo, hi := clmul(uint64(register(region)), k[0])
			if hi != 0 {
				t.Fatalf("product spills into the high qword: %#x", hi)
			}
			e := register(binary.LittleEndian.AppendUint64(nil, lo))
			got := register(binary.LittleEndian.AppendUint32(nil, e))
			if want := register(append(region, make([]byte, after)...)); got != want {
				t.Fatalf("after=%d n=%d: %#08x, want %#08x", after, n, got, want)
			}
		}
	}
}

func TestXInvPowModP(t *testing.T) {
	for _, k := range []int{0, 1, 31, 32, 33, 100, 537} {
		// x^k · x^-k = 1: multiply x^-k by x k times.
		r := xInvPowModP(k)
		for range k {
			carry := r >> 31
			r <<= 1
			if carry != 0 {
				r ^= poly
			}
		}
		if r != 1 {
			t.Errorf("x^%d · xInvPowModP(%d) = %#08x, want 1", k, k, r)
		}
	}
}

// The kernel pads p in front with z zero bytes and adds the initial
// register times unshift[z] to the first 64 bits: in Go, that must give the
// register hash/crc32 reaches from crc over p.
func TestUnshiftModel(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	k := makeFoldConsts()
	for z := range 64 {
		for _, n := range []int{64 - z, 128 - z, 1024 - z} { // as the kernel pads
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			crc := r.Uint32()
			lo, hi := clmul(uint64(crc), k.unshift[z])
			if hi != 0 {
				t.Fatalf("z=%d: product spills into the high qword", z)
			}
			padded := append(make([]byte, z), p...)
			for i := range 8 {
				padded[i] ^= byte(lo >> (8 * i))
			}
			want := ^crc32.Update(^crc, castagnoli, p)
			if got := register(padded); got != want {
				t.Fatalf("z=%d n=%d: %#08x, want %#08x", z, n, got, want)
			}
		}
	}
}
