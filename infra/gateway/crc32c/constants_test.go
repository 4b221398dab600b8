package crc32c

import (
	"hash/crc32"
	"math/bits"
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
