package crc32c

import "math/bits"

// poly is the Castagnoli polynomial in normal bit order without its x^32
// term: bit i is the coefficient of x^i.
const poly = 0x1EDC6F41

// xPowModP returns x^k mod P in normal bit order (bit i is the coefficient
// of x^i).
func xPowModP(k int) uint32 {
	r := uint32(1)
	for ; k > 0; k-- {
		carry := r >> 31
		r <<= 1
		if carry != 0 {
			r ^= poly
		}
	}
	return r
}

// foldConst returns x^k mod P laid out as one 64-bit lane of the reflected
// domain: the coefficient of x^i sits at bit 63-i. In that layout a
// carry-less multiply of two lanes yields their product times x (the
// 127-bit result is read as 128 bits), which the exponents in foldPair
// compensate for.
func foldConst(k int) uint64 {
	return uint64(bits.Reverse32(xPowModP(k))) << 32
}

// foldPair returns the two lane constants that move a 128-bit block d bits
// further along the message. The block's low lane holds its higher-degree
// half (x^64·A) and its high lane the lower half (B), so
// A·x^(d+64) + B·x^d, less the x from each multiply, gives the exponents.
func foldPair(d int) [2]uint64 {
	return [2]uint64{foldConst(d + 63), foldConst(d - 1)}
}

// foldConsts is the table the amd64 kernel reads; offsets are fixed in
// crc32c_amd64.s.
type foldConsts struct {
	by256 [2]uint64 // four registers, each 256 bytes on: 2048 bits
	by192 [2]uint64 // 1536 bits, first of four registers onto the last
	by128 [2]uint64 // 1024 bits
	by64  [2]uint64 // 512 bits: one register onto the next
	// lanes folds the four 128-bit lanes of one register onto its last:
	// 384, 256 and 128 bits; the last lane's constants are zero.
	lanes [8]uint64
}

var foldK = makeFoldConsts()

func makeFoldConsts() foldConsts {
	var k foldConsts
	k.by256 = foldPair(2048)
	k.by192 = foldPair(1536)
	k.by128 = foldPair(1024)
	k.by64 = foldPair(512)
	for i, d := range []int{384, 256, 128} {
		p := foldPair(d)
		k.lanes[2*i], k.lanes[2*i+1] = p[0], p[1]
	}
	return k
}
