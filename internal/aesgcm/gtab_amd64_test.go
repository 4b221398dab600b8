package aesgcm

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// gf128 is an element of GHASH's field as the specification writes a
// block: hi holds bytes 0..7 big-endian, and the first bit is x^0.
type gf128 struct{ hi, lo uint64 }

// mul is the specification's bit-by-bit multiplication (Algorithm 1 of
// NIST SP 800-38D), the oracle for the assembly's.
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

// repr is x in the assembly's representation (see makeGHASHTable),
// computed independently: byte-reversed, times x^-1.
func (x gf128) repr() (r [16]byte) {
	hi, lo := x.hi, x.lo
	carry := hi >> 63
	hi = hi<<1 | lo>>63
	lo <<= 1
	if carry == 1 {
		hi ^= 0xc200000000000000
		lo ^= 1
	}
	binary.LittleEndian.PutUint64(r[:8], lo)
	binary.LittleEndian.PutUint64(r[8:], hi)
	return r
}

func TestGHASHTableMatchesSpec(t *testing.T) {
	if !cpuHasVAES {
		t.Skip("CPU lacks VAES/AVX-512: nothing of ours to compare")
	}
	r := rand.New(rand.NewPCG(17, 18))
	for range 50 {
		var hBlock [16]byte
		copy(hBlock[:], randBytes(r, 16))
		h := gf128{binary.BigEndian.Uint64(hBlock[:8]), binary.BigEndian.Uint64(hBlock[8:])}
		var tab [gtabSize]byte
		makeGHASHTable(&tab, &hBlock)
		p := h
		for k := 1; k <= gtabPowers; k++ {
			i := gtabPowers - k // H^k's entry
			want := p.repr()
			if got := [16]byte(tab[16*i:]); got != want {
				t.Fatalf("H=%x: H^%d entry %x, want %x", hBlock, k, got, want)
			}
			kara := binary.LittleEndian.Uint64(want[:8]) ^ binary.LittleEndian.Uint64(want[8:])
			e := tab[16*(gtabKara+i):]
			if binary.LittleEndian.Uint64(e) != kara || binary.LittleEndian.Uint64(e[8:]) != kara {
				t.Fatalf("H=%x: Karatsuba entry of H^%d wrong", hBlock, k)
			}
			p = p.mul(h)
		}
		for i := gtabPowers; i < gtabKara; i++ {
			if [16]byte(tab[16*i:]) != [16]byte{} {
				t.Fatalf("padding entry %d not zero", i)
			}
		}
	}
}

func TestGFMulMatchesSpec(t *testing.T) {
	if !cpuHasVAES {
		t.Skip("CPU lacks VAES/AVX-512: nothing of ours to compare")
	}
	r := rand.New(rand.NewPCG(19, 20))
	for range 1000 {
		a := gf128{r.Uint64(), r.Uint64()}
		b := gf128{r.Uint64(), r.Uint64()}
		x, y := a.repr(), b.repr()
		gfMul(&x, &y)
		if want := a.mul(b).repr(); x != want {
			t.Fatalf("%x · %x = %x, want %x", a, b, x, want)
		}
	}
}
