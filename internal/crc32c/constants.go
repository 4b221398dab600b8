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

// xInvPowModP returns x^-k mod P in normal bit order. x is invertible
// because P's constant term is 1: for v with a constant term, v+P has none
// and (v+P)/x keeps x^32/x = x^31.
func xInvPowModP(k int) uint32 {
	r := uint32(1)
	for ; k > 0; k-- {
		if r&1 != 0 {
			r = (r^poly)>>1 | 1<<31
		} else {
			r >>= 1
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

// shiftConst returns the lane that moves a 32-bit CRC register on by
// `after` bytes of message: for a region R whose register is s = R·x^32,
// a carry-less multiply of s (low dword) by the lane (K in the low dword)
// leaves a low qword that, read as 64 message bits, is s·K·x; CRC32Q of
// those from a zero register multiplies by x^32 and reduces, to
// s·K·x^33 mod P. With K = x^(8·after-65)
// that is R·x^(8·after) mod P: R's contribution, as the last 32 bits of the
// message, at the point `after` bytes beyond R's end.
func shiftConst(after int) [2]uint64 {
	return [2]uint64{uint64(bits.Reverse32(xPowModP(8*after - 65))), 0}
}

// While the vector unit folds 256 bytes per iteration, the integer unit
// runs three CRC32Q streams of mixWords words each over three further
// regions; mixIters iterations make a mix block, laid out as
// [stream 1][stream 2][stream 3][vector data]. The CRC32 instruction
// issues each cycle but takes three, so three streams keep it busy; six
// words per stream and iteration matched the vector unit best, and four
// iterations lets inputs from 2 KiB use the mix.
const (
	mixIters  = 4
	mixWords  = 6 // unrolled in crc32c_amd64.s
	mixStream = 8 * mixWords * mixIters
	mixBlock  = 256*mixIters + 3*mixStream
)

// A mix block must be whole 64-byte blocks, so that what follows it is too
// (this fails to compile otherwise).
var _ = [1]struct{}{}[mixBlock%64]

// foldConsts is the table the amd64 kernel reads, through go_asm.h's
// offsets.
type foldConsts struct {
	by256 [2]uint64 // four registers, each 256 bytes on: 2048 bits
	by192 [2]uint64 // 1536 bits, first of four registers onto the last
	by128 [2]uint64 // 1024 bits
	by64  [2]uint64 // 512 bits: one register onto the next
	// lanes folds the four 128-bit lanes of one register onto its last:
	// 384, 256 and 128 bits; the last lane's constants are zero.
	lanes [8]uint64
	// jump moves the accumulators over a mix block's three streams onto
	// its vector data.
	jump [2]uint64
	// mix moves each stream's register to the end of its mix block.
	mix [3][2]uint64
	// unshift[z] turns the initial register into 64 bits for the start
	// of the message: the kernel reads z zero bytes before p to make its
	// length a multiple of 64, so the register, which belongs at p, must
	// move z bytes back. A carry-less multiply of the register c (low
	// dword) by x^(31-8z) (low dword) gives a low qword Q = c·x^(32-8z)
	// (the multiply adds an x) that, read as the first 8 bytes of a message
	// N bytes long, stands for Q·x^(8N-64)·x^32 = c·x^(8(N-z)), which is
	// what register c contributes at p. No reduction needed, so it is
	// ready about as soon as the first load.
	unshift [64]uint64
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
	k.jump = foldPair(8 * (3*mixStream + 256))
	for i := range k.mix {
		k.mix[i] = shiftConst((2-i)*mixStream + 256*mixIters)
	}
	for z := range k.unshift {
		x := xPowModP(31 - 8*z)
		if 31-8*z < 0 {
			x = xInvPowModP(8*z - 31)
		}
		k.unshift[z] = uint64(bits.Reverse32(x))
	}
	return k
}
