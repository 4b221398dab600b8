package aesgcm

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
)

// cpuHasVAES reports whether the CPU and OS support everything the
// assembly uses: AES-NI, PCLMULQDQ, AVX-512 F/BW/VL with ZMM state saved by
// the OS, VAES and VPCLMULQDQ.
var cpuHasVAES = detectVAES()

func detectVAES() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const (
		pclmul  = 1 << 1
		aesni   = 1 << 25
		osxsave = 1 << 27
	)
	if ecx1&(pclmul|aesni|osxsave) != pclmul|aesni|osxsave {
		return false
	}
	// XCR0: SSE, AVX, opmask, ZMM0-15 upper halves, ZMM16-31.
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, ecx7, _ := cpuid(7, 0)
	const (
		avx512f  = 1 << 16
		avx512bw = 1 << 30
		avx512vl = 1 << 31
		vaes     = 1 << 9
		vpclmul  = 1 << 10
	)
	return ebx7&(avx512f|avx512bw|avx512vl) == avx512f|avx512bw|avx512vl &&
		ecx7&(vaes|vpclmul) == vaes|vpclmul
}

// vaesGCM is AES-GCM on VAES and VPCLMULQDQ. It is never written after
// newVAES returns, so one value serves concurrent callers.
type vaesGCM struct {
	ks     [240]byte // round keys
	rounds int       // 10 or 14
	gtab   [gtabSize]byte // GHASH key powers, see makeGHASHTable
}

var _ cipher.AEAD = (*vaesGCM)(nil)

func newVAES(key []byte) cipher.AEAD {
	g := new(vaesGCM)
	g.rounds = expandKey(&g.ks, key)
	var zero, h [16]byte
	aesEncBlock(&g.ks, g.rounds, &h, &zero)
	makeGHASHTable(&g.gtab, &h)
	return g
}

func (g *vaesGCM) NonceSize() int { return nonceSize }
func (g *vaesGCM) Overhead() int  { return tagSize }

func (g *vaesGCM) Seal(dst, nonce, plaintext, additionalData []byte) []byte {
	if len(nonce) != nonceSize {
		panic("aesgcm: incorrect nonce length given to GCM")
	}
	if uint64(len(plaintext)) > maxPlaintext {
		panic("aesgcm: message too large for GCM")
	}
	ret, out := sliceForAppend(dst, len(plaintext)+tagSize)
	if inexactOverlap(out, plaintext) {
		panic("aesgcm: invalid buffer overlap of output and input")
	}
	if anyOverlap(out, additionalData) {
		panic("aesgcm: invalid buffer overlap of output and additional data")
	}
	n := len(plaintext)
	var ctr, tagMask, x [16]byte
	copy(ctr[:], nonce)
	ctr[15] = 1
	aesEncBlock(&g.ks, g.rounds, &tagMask, &ctr)
	ctr[15] = 2
	g.ghash(&x, additionalData)
	bulk := n &^ 255
	if bulk > 0 {
		sealBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &out[0], &plaintext[0], bulk)
	}
	if rest := n - bulk; rest > 0 {
		binary.BigEndian.PutUint32(ctr[12:], 2+uint32(bulk/blockSize))
		ctrXor(&g.ks, g.rounds, &ctr, &out[bulk], &plaintext[bulk], rest)
		ghashUpdate(&g.gtab[gtabH16], &x, &out[bulk], rest)
	}
	g.finish((*[16]byte)(out[n:]), &x, &tagMask, len(additionalData), n)
	return ret
}

func (g *vaesGCM) Open(dst, nonce, ciphertext, additionalData []byte) ([]byte, error) {
	if len(nonce) != nonceSize {
		panic("aesgcm: incorrect nonce length given to GCM")
	}
	if len(ciphertext) < tagSize || uint64(len(ciphertext)) > maxPlaintext+tagSize {
		return nil, errOpen
	}
	n := len(ciphertext) - tagSize
	ret, out := sliceForAppend(dst, n)
	if inexactOverlap(out, ciphertext) {
		panic("aesgcm: invalid buffer overlap of output and input")
	}
	if anyOverlap(out, additionalData) {
		panic("aesgcm: invalid buffer overlap of output and additional data")
	}
	var ctr, tagMask, x, want [16]byte
	copy(ctr[:], nonce)
	ctr[15] = 1
	aesEncBlock(&g.ks, g.rounds, &tagMask, &ctr)
	ctr[15] = 2
	g.ghash(&x, additionalData)
	// Decryption runs with hashing, as in crypto/cipher, so out holds
	// plaintext before the tag is checked and is cleared if it fails.
	bulk := n &^ 255
	if bulk > 0 {
		openBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &out[0], &ciphertext[0], bulk)
	}
	if rest := n - bulk; rest > 0 {
		ghashUpdate(&g.gtab[gtabH16], &x, &ciphertext[bulk], rest) // before an in-place decrypt overwrites it
		binary.BigEndian.PutUint32(ctr[12:], 2+uint32(bulk/blockSize))
		ctrXor(&g.ks, g.rounds, &ctr, &out[bulk], &ciphertext[bulk], rest)
	}
	g.finish(&want, &x, &tagMask, len(additionalData), n)
	if subtle.ConstantTimeCompare(want[:], ciphertext[n:]) != 1 {
		// Like crypto/cipher: no unauthenticated plaintext is left behind,
		// and a failed in-place Open looks the same on every platform.
		clear(out)
		return nil, errOpen
	}
	return ret, nil
}

// ghash absorbs data, zero-padded to whole blocks, into the GHASH state x.
func (g *vaesGCM) ghash(x *[16]byte, data []byte) {
	if len(data) > 0 {
		ghashUpdate(&g.gtab[gtabH16], x, &data[0], len(data))
	}
}

// finish absorbs the lengths block into the GHASH state x and writes the
// tag, GHASH XOR tagMask, into t.
func (g *vaesGCM) finish(t, x, tagMask *[16]byte, adLen, ctLen int) {
	var lengths [16]byte
	binary.BigEndian.PutUint64(lengths[:8], uint64(adLen)*8)
	binary.BigEndian.PutUint64(lengths[8:], uint64(ctLen)*8)
	ghashUpdate(&g.gtab[gtabH16], x, &lengths[0], 16)
	// x is byte-reversed: its high qword is the block's first eight bytes.
	binary.BigEndian.PutUint64(t[:8], binary.LittleEndian.Uint64(x[8:])^binary.BigEndian.Uint64(tagMask[:8]))
	binary.BigEndian.PutUint64(t[8:], binary.LittleEndian.Uint64(x[:8])^binary.BigEndian.Uint64(tagMask[8:]))
}

// cpuid executes CPUID with EAX=leaf, ECX=sub.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// xgetbv returns XCR0.
func xgetbv() (eax, edx uint32)

// aesEncBlock encrypts one block with the expanded key ks.
//
//go:noescape
func aesEncBlock(ks *[240]byte, rounds int, dst, src *[16]byte)

// ctrXor XORs n > 0 bytes of src with the GCM keystream whose first
// counter block is ctr (incremented in its last 32 bits, big-endian) and
// writes them to dst; dst and src are equal or do not overlap.
//
//go:noescape
func ctrXor(ks *[240]byte, rounds int, ctr *[16]byte, dst, src *byte, n int)

// ghashUpdate absorbs n > 0 bytes of data, the last block zero-padded,
// into the GHASH state x; htable points at H^16 in the GHASH table.
//
//go:noescape
func ghashUpdate(htable *byte, x *[16]byte, data *byte, n int)

// sealBulk encrypts n bytes of src into dst from counter block ctr and
// absorbs the ciphertext into the GHASH state x, in one pass; n is a
// positive multiple of 256.
//
//go:noescape
func sealBulk(ks *[240]byte, rounds int, gtab *[gtabSize]byte, ctr, x *[16]byte, dst, src *byte, n int)

// openBulk absorbs n bytes of ciphertext src into the GHASH state x and
// decrypts them into dst from counter block ctr, in one pass; n is a
// positive multiple of 256.
//
//go:noescape
func openBulk(ks *[240]byte, rounds int, gtab *[gtabSize]byte, ctr, x *[16]byte, dst, src *byte, n int)
