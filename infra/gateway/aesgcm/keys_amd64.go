package aesgcm

import (
	"encoding/binary"
	"math/bits"
)

// sbox is AES's S-box, computed rather than typed in: the multiplicative
// inverse in GF(2^8) followed by the affine map.
var sbox = makeSbox()

func makeSbox() (s [256]byte) {
	// p walks GF(2^8)* by powers of 3 and q by powers of 3^-1, so q is
	// always p's inverse.
	p, q := byte(1), byte(1)
	for {
		p = p ^ p<<1 ^ byte(int8(p)>>7)&0x1b
		q ^= q << 1
		q ^= q << 2
		q ^= q << 4
		if q&0x80 != 0 {
			q ^= 0x09
		}
		s[p] = q ^ bits.RotateLeft8(q, 1) ^ bits.RotateLeft8(q, 2) ^
			bits.RotateLeft8(q, 3) ^ bits.RotateLeft8(q, 4) ^ 0x63
		if p == 1 {
			break
		}
	}
	s[0] = 0x63
	return s
}

func subWord(w uint32) uint32 {
	return uint32(sbox[w>>24])<<24 | uint32(sbox[w>>16&0xff])<<16 |
		uint32(sbox[w>>8&0xff])<<8 | uint32(sbox[w&0xff])
}

// expandKey writes the AES encryption round keys for a 16- or 32-byte key
// into ks, in the byte order AESENC takes them, and returns the number of
// rounds (10 or 14).
func expandKey(ks *[240]byte, key []byte) int {
	nk := len(key) / 4
	rounds := nk + 6
	var w [60]uint32
	for i := range nk {
		w[i] = binary.BigEndian.Uint32(key[4*i:])
	}
	rcon := uint32(1)
	for i := nk; i < 4*(rounds+1); i++ {
		t := w[i-1]
		switch {
		case i%nk == 0:
			t = subWord(bits.RotateLeft32(t, 8)) ^ rcon<<24
			rcon <<= 1
			if rcon&0x100 != 0 {
				rcon ^= 0x11b
			}
		case nk > 6 && i%nk == 4:
			t = subWord(t)
		}
		w[i] = w[i-nk] ^ t
	}
	for i := range 4 * (rounds + 1) {
		binary.BigEndian.PutUint32(ks[4*i:], w[i])
	}
	return rounds
}

// gf128 is an element of GHASH's field as the specification writes a
// block: hi holds bytes 0..7 big-endian, and the first bit is x^0.
type gf128 struct{ hi, lo uint64 }

// mul is the specification's bit-by-bit multiplication; it runs only when
// a key is set up.
func (x gf128) mul(y gf128) gf128 {
	var z gf128
	v := y
	for i := range 128 {
		var bit uint64
		if i < 64 {
			bit = x.hi >> (63 - i) & 1
		} else {
			bit = x.lo >> (127 - i) & 1
		}
		mask := -bit
		z.hi ^= v.hi & mask
		z.lo ^= v.lo & mask
		lsb := v.lo & 1
		v.lo = v.lo>>1 | v.hi<<63
		v.hi = v.hi>>1 ^ 0xe1<<56&-lsb
	}
	return z
}

// The GHASH table (gtab) holds, in 16-byte entries:
//
//	0..31   H^32, H^31, ..., H^1
//	32..35  zeros, which ghashUpdate's tail may read past H^1 (and
//	        multiplies only by zero blocks)
//	36..67  for each power in 0..31, its two 64-bit halves XORed (in both
//	        halves), the Karatsuba middle operand
//
// ghashUpdate takes the table from entry 16 (H^16) on.
const (
	gtabPowers = 32
	gtabKara   = 36
	gtabSize   = (gtabKara + gtabPowers) * 16
	gtabH16    = (gtabPowers - 16) * 16 // byte offset of H^16
)

// makeGHASHTable fills t (see gtabSize) from the hash key block H =
// E(K, 0^128). The powers are in the assembly's representation: the block
// byte-reversed (a little-endian 128-bit integer whose bit 127 is x^0)
// and multiplied by x^-1, which makes the carry-less product of two such
// values come out reduced by the 0xC2...01 folding without a separate
// shift.
func makeGHASHTable(t *[gtabSize]byte, hBlock *[16]byte) {
	h := gf128{binary.BigEndian.Uint64(hBlock[:8]), binary.BigEndian.Uint64(hBlock[8:])}
	p := h
	for i := gtabPowers - 1; i >= 0; i-- {
		hi, lo := p.hi, p.lo
		carry := hi >> 63
		hi = hi<<1 | lo>>63
		lo <<= 1
		hi ^= 0xc2 << 56 & -carry
		lo ^= carry
		binary.LittleEndian.PutUint64(t[16*i:], lo)
		binary.LittleEndian.PutUint64(t[16*i+8:], hi)
		binary.LittleEndian.PutUint64(t[16*(gtabKara+i):], lo^hi)
		binary.LittleEndian.PutUint64(t[16*(gtabKara+i)+8:], lo^hi)
		p = p.mul(h)
	}
}
