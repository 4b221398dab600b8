// Package ff1 is the FF1 format-preserving encryption mode of NIST SP
// 800-38G (Rev. 1) over crypto/aes: a tweakable permutation of the
// numeral strings of one length in one radix. xp writes its own because no
// Go implementation was to be had from the module proxy; it is tested
// against NIST's FF1 sample vectors (AES-128, -192 and -256).
//
// Radixes run from 2 to 256 (numerals are bytes). The domain must hold at
// least a million strings (radix^len ≥ 10^6, the Rev. 1 minimum), and a
// string holds at most MaxLen numerals. The rounds work on the two halves
// as integers: in uint64 arithmetic while radix^⌈len/2⌉ < 2^63 (up to 18
// decimal digits or 13 letters a half, no allocation), with math/big
// beyond.
package ff1

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"sync"
)

// Limits of this implementation.
const (
	// MinDomain is the smallest domain (radix^len) FF1 may permute: SP
	// 800-38G Rev. 1 requires radix^minlen ≥ 1,000,000.
	MinDomain = 1_000_000
	// MaxRadix is the largest radix: numerals are bytes.
	MaxRadix = 256
	// MaxLen bounds the numerals of one string: big-number rounds cost
	// the square of the length.
	MaxLen = 1 << 16
	// MaxTweak bounds the tweak's length in bytes.
	MaxTweak = 1 << 16
)

// Errors callers branch on.
var (
	// ErrDomain means radix^len is below MinDomain (or len below 2).
	ErrDomain = errors.New("ff1: domain below the minimum of 1,000,000 values")
	// ErrInput means a numeral is not below the radix, the radix is out
	// of 2..MaxRadix, or the string or tweak is too long.
	ErrInput = errors.New("ff1: invalid input")
)

// rounds is FF1's number of Feistel rounds.
const rounds = 10

// Cipher is FF1 under one AES key. It is safe for concurrent use: every
// call keeps its state on its own stack.
type Cipher struct {
	block cipher.Block
}

// New returns FF1 under key: 16, 24 or 32 bytes (AES-128, -192, -256).
func New(key []byte) (*Cipher, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("ff1: %w", err)
	}
	return &Cipher{block: b}, nil
}

// Encrypt replaces the numerals of x (each below radix) with their FF1
// encryption under tweak. On error x is unchanged.
func (c *Cipher) Encrypt(x []byte, radix int, tweak []byte) error {
	return c.crypt(x, radix, tweak, true)
}

// Decrypt undoes Encrypt with the same radix and tweak.
func (c *Cipher) Decrypt(x []byte, radix int, tweak []byte) error {
	return c.crypt(x, radix, tweak, false)
}

// CheckDomain reports ErrDomain when strings of n numerals in radix are
// too few for FF1, ErrInput when radix or n is out of range.
func CheckDomain(radix, n int) error {
	if radix < 2 || radix > MaxRadix || n > MaxLen {
		return ErrInput
	}
	if n < 2 {
		return ErrDomain
	}
	d := 1
	for range n {
		if d *= radix; d >= MinDomain {
			return nil
		}
	}
	return ErrDomain
}

func (c *Cipher) crypt(x []byte, radix int, tweak []byte, enc bool) error {
	if err := CheckDomain(radix, len(x)); err != nil {
		return err
	}
	if len(tweak) > MaxTweak {
		return ErrInput
	}
	for _, d := range x {
		if int(d) >= radix {
			return ErrInput
		}
	}
	w := works.Get().(*work)
	defer works.Put(w)
	w.init(c.block, radix, len(x), tweak)
	if pv, ok := pow64(radix, w.v); ok {
		pu, _ := pow64(radix, w.u)
		w.fast(x, pu, pv, enc)
		return nil
	}
	w.slow(x, enc)
	return nil
}

// work is the state of one call, shared by its rounds; pooled, since
// buffers handed to the cipher.Block interface would escape to the heap
// on every call.
type work struct {
	block   cipher.Block
	radix   int
	n, u, v int
	b, d    int
	// state is the CBC-MAC state after P and the blocks of Q that hold
	// only tweak and padding, the same in every round.
	state [16]byte
	// q is the rest of Q: tweak bytes, padding, the round number and the
	// other half's value; qNum is where the value starts.
	q    []byte
	qNum int
	r    [16]byte
	s    []byte
	blk  [16]byte
}

var works = sync.Pool{New: func() any { return &work{q: make([]byte, 0, 64), s: make([]byte, 0, 64)} }}

// init computes b, d, the block P and the CBC-MAC over P and the fixed
// blocks of Q = T ‖ 0^pad ‖ [i]^1 ‖ [NUM(B)]^b.
func (w *work) init(block cipher.Block, radix, n int, tweak []byte) {
	w.block, w.radix, w.n = block, radix, n
	w.u = n / 2
	w.v = n - w.u
	// b = ⌈⌈v·log2(radix)⌉/8⌉: the bytes of radix^v − 1.
	w.b = (bitLenPow(radix, w.v) + 7) / 8
	w.d = 4*((w.b+3)/4) + 4
	t := len(tweak)
	pad := mod(-t-w.b-1, 16)
	p := &w.blk
	p[0], p[1], p[2] = 1, 2, 1
	p[3], p[4], p[5] = byte(radix>>16), byte(radix>>8), byte(radix)
	p[6] = 10
	p[7] = byte(w.u)
	binary.BigEndian.PutUint32(p[8:], uint32(n))
	binary.BigEndian.PutUint32(p[12:], uint32(t))
	block.Encrypt(w.state[:], p[:])
	fixed := (t + pad) / 16 * 16
	for off := 0; off < fixed; off += 16 {
		w.blk = [16]byte{}
		if off < t {
			copy(w.blk[:], tweak[off:min(t, off+16)])
		}
		xorBlock(&w.state, &w.blk)
		block.Encrypt(w.state[:], w.state[:])
	}
	w.q = w.q[:0]
	if fixed < t {
		w.q = append(w.q, tweak[fixed:]...)
	}
	for range t + pad - fixed - len(w.q) {
		w.q = append(w.q, 0)
	}
	w.q = append(w.q, 0) // the round number
	w.qNum = len(w.q)
	w.q = appendZeros(w.q, w.b)
	w.s = appendZeros(w.s[:0], (w.d+15)/16*16)
}

// prf leaves in w.s[:d] the round function's output S for round i; the
// other half's value is already in w.q[qNum:] (b bytes, big-endian).
func (w *work) prf(i int) {
	w.q[w.qNum-1] = byte(i)
	w.r = w.state
	for off := 0; off < len(w.q); off += 16 {
		xorBlock(&w.r, (*[16]byte)(w.q[off:off+16]))
		w.block.Encrypt(w.r[:], w.r[:])
	}
	copy(w.s, w.r[:])
	for j := 1; 16*j < w.d; j++ {
		w.blk = [16]byte{}
		binary.BigEndian.PutUint64(w.blk[8:], uint64(j))
		xorBlock(&w.blk, &w.r)
		w.block.Encrypt(w.s[16*j:16*j+16], w.blk[:])
	}
}

// y64 is NUM_2(S) mod m for round i with the other half's value other,
// when b ≤ 8 (so d ≤ 12).
func (w *work) y64(i int, other, m uint64) uint64 {
	var nb [8]byte
	binary.BigEndian.PutUint64(nb[:], other)
	copy(w.q[w.qNum:], nb[8-w.b:])
	w.prf(i)
	var hi uint64
	for _, c := range w.s[:w.d-8] {
		hi = hi<<8 | uint64(c)
	}
	lo := binary.BigEndian.Uint64(w.s[w.d-8 : w.d])
	return bits.Rem64(hi, lo, m)
}

// fast runs the rounds in uint64: radix^v < 2^63.
func (w *work) fast(x []byte, pu, pv uint64, enc bool) {
	a := num64(x[:w.u], w.radix)
	b := num64(x[w.u:], w.radix)
	m := func(i int) uint64 {
		if i%2 == 0 {
			return pu
		}
		return pv
	}
	if enc {
		for i := range rounds {
			mi := m(i)
			c := a + w.y64(i, b, mi) // both below mi < 2^63: no overflow
			if c >= mi {
				c -= mi
			}
			a, b = b, c
		}
	} else {
		for i := rounds - 1; i >= 0; i-- {
			mi := m(i)
			y := w.y64(i, a, mi)
			c := b - y
			if b < y {
				c = b + (mi - y)
			}
			a, b = c, a
		}
	}
	str64(x[:w.u], a, w.radix)
	str64(x[w.u:], b, w.radix)
}

// slow runs the rounds in math/big.
func (w *work) slow(x []byte, enc bool) {
	a := numBig(x[:w.u], w.radix)
	b := numBig(x[w.u:], w.radix)
	r := big.NewInt(int64(w.radix))
	pu := new(big.Int).Exp(r, big.NewInt(int64(w.u)), nil)
	pv := new(big.Int).Exp(r, big.NewInt(int64(w.v)), nil)
	m := func(i int) *big.Int {
		if i%2 == 0 {
			return pu
		}
		return pv
	}
	y := new(big.Int)
	round := func(i int, other *big.Int) {
		other.FillBytes(w.q[w.qNum:])
		w.prf(i)
		y.SetBytes(w.s[:w.d])
	}
	if enc {
		for i := range rounds {
			round(i, b)
			c := new(big.Int).Add(a, y)
			a, b = b, c.Mod(c, m(i))
		}
	} else {
		for i := rounds - 1; i >= 0; i-- {
			round(i, a)
			c := new(big.Int).Sub(b, y)
			a, b = c.Mod(c, m(i)), a // Euclidean modulus: never negative
		}
	}
	strBig(x[:w.u], a, w.radix)
	strBig(x[w.u:], b, w.radix)
}

// pow64 returns radix^k when it is below 2^63.
func pow64(radix, k int) (uint64, bool) {
	r := uint64(1)
	for range k {
		hi, lo := bits.Mul64(r, uint64(radix))
		if hi != 0 || lo >= 1<<63 {
			return 0, false
		}
		r = lo
	}
	return r, true
}

// bitLenPow is the bit length of radix^k − 1, ⌈k·log2(radix)⌉, computed
// exactly.
func bitLenPow(radix, k int) int {
	if radix&(radix-1) == 0 {
		return k * bits.TrailingZeros(uint(radix))
	}
	if v, ok := pow64(radix, k); ok {
		return bits.Len64(v - 1)
	}
	// Beyond 2^63: radix is no power of two, so radix^k is not one
	// either and its bit length is that of radix^k − 1.
	p := new(big.Int).Exp(big.NewInt(int64(radix)), big.NewInt(int64(k)), nil)
	return p.BitLen()
}

func num64(x []byte, radix int) uint64 {
	var v uint64
	for _, d := range x {
		v = v*uint64(radix) + uint64(d)
	}
	return v
}

func str64(x []byte, v uint64, radix int) {
	for i := len(x) - 1; i >= 0; i-- {
		x[i] = byte(v % uint64(radix))
		v /= uint64(radix)
	}
}

// chunk is how many numerals of radix fit in a uint64 word below 2^63,
// and radix to that power.
func chunk(radix int) (int, uint64) {
	k, p := 0, uint64(1)
	for {
		hi, lo := bits.Mul64(p, uint64(radix))
		if hi != 0 || lo >= 1<<63 {
			return k, p
		}
		k, p = k+1, lo
	}
}

func numBig(x []byte, radix int) *big.Int {
	k, pk := chunk(radix)
	v := new(big.Int)
	w, mul := new(big.Int), new(big.Int)
	for len(x) > 0 {
		n := min(k, len(x))
		p := pk
		if n < k {
			p, _ = pow64(radix, n)
		}
		v.Mul(v, mul.SetUint64(p))
		v.Add(v, w.SetUint64(num64(x[:n], radix)))
		x = x[n:]
	}
	return v
}

func strBig(x []byte, v *big.Int, radix int) {
	k, pk := chunk(radix)
	v = new(big.Int).Set(v)
	q, r, d := new(big.Int), new(big.Int), new(big.Int).SetUint64(pk)
	for len(x) > 0 {
		n := min(k, len(x))
		if n < k {
			str64(x, v.Uint64(), radix)
			return
		}
		q.QuoRem(v, d, r)
		str64(x[len(x)-n:], r.Uint64(), radix)
		x = x[:len(x)-n]
		v, q = q, v
	}
}

func xorBlock(dst, src *[16]byte) {
	a := binary.LittleEndian.Uint64(dst[:8]) ^ binary.LittleEndian.Uint64(src[:8])
	b := binary.LittleEndian.Uint64(dst[8:]) ^ binary.LittleEndian.Uint64(src[8:])
	binary.LittleEndian.PutUint64(dst[:8], a)
	binary.LittleEndian.PutUint64(dst[8:], b)
}

func appendZeros(b []byte, n int) []byte {
	for range n {
		b = append(b, 0)
	}
	return b
}

func mod(a, m int) int { return ((a % m) + m) % m }
