package aesgcm

import (
	"math/bits"
	"testing"
)

// makeSbox computes AES's S-box (the multiplicative inverse in GF(2^8)
// followed by the affine map), the reference subWord is checked against.
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

// TestSubWordIsSbox checks the AESENCLAST SubWord against the S-box for
// every byte in every position (the instruction needs only AES-NI, which
// every CPU of the VAES path has).
func TestSubWordIsSbox(t *testing.T) {
	if !cpuHasVAES {
		t.Skip("CPU lacks VAES/AVX-512: key expansion is never used here")
	}
	sbox := makeSbox()
	if sbox[0x00] != 0x63 || sbox[0x53] != 0xed || sbox[0xff] != 0x16 {
		t.Fatalf("reference S-box wrong: %#x %#x %#x", sbox[0], sbox[0x53], sbox[0xff])
	}
	for b := range 256 {
		for pos := range 4 {
			w := uint32(b)<<(8*pos) | uint32(0x5a)<<(8*((pos+1)%4))
			want := uint32(sbox[b])<<(8*pos) | uint32(sbox[0x5a])<<(8*((pos+1)%4))
			for i := range 4 {
				if i != pos && i != (pos+1)%4 {
					want |= uint32(sbox[0]) << (8 * i)
				}
			}
			if got := subWord(w); got != want {
				t.Fatalf("subWord(%#08x) = %#08x, want %#08x", w, got, want)
			}
		}
	}
}
