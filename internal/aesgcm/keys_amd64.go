package aesgcm

import (
	"encoding/binary"
	"math/bits"
)

// subWord applies the AES S-box to each byte of w, in constant time: the
// word is broadcast to all four columns (so ShiftRows moves nothing) and
// put through AESENCLAST with a zero round key, which is SubBytes alone.
//
//go:noescape
func subWord(w uint32) uint32

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
// shift; gfMul's product of the representations of A and B is the
// representation of A·B, so the powers follow by repeated gfMul.
func makeGHASHTable(t *[gtabSize]byte, hBlock *[16]byte) {
	var h, p [16]byte
	hi, lo := binary.BigEndian.Uint64(hBlock[:8]), binary.BigEndian.Uint64(hBlock[8:])
	carry := hi >> 63
	hi = hi<<1 | lo>>63
	lo <<= 1
	hi ^= 0xc2 << 56 & -carry
	lo ^= carry
	binary.LittleEndian.PutUint64(h[:8], lo)
	binary.LittleEndian.PutUint64(h[8:], hi)
	p = h
	for i := gtabPowers - 1; i >= 0; i-- {
		copy(t[16*i:], p[:])
		kara := binary.LittleEndian.Uint64(p[:8]) ^ binary.LittleEndian.Uint64(p[8:])
		binary.LittleEndian.PutUint64(t[16*(gtabKara+i):], kara)
		binary.LittleEndian.PutUint64(t[16*(gtabKara+i)+8:], kara)
		gfMul(&p, &h)
	}
}
