package aesgcm

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"

	"golang.org/x/sys/cpu"
)

// cpuHasVAES reports whether the CPU and OS support everything the
// assembly uses: AES-NI, PCLMULQDQ, AVX, BMI2, AVX-512 F/BW/VL with ZMM state
// saved by the OS, VAES and VPCLMULQDQ.
var cpuHasVAES = detectVAES()

func detectVAES() bool {
	// x/sys/cpu reports the AVX-512 features only when the OS saves the
	// ZMM and opmask state (XCR0).
	x := &cpu.X86
	return x.HasAES && x.HasPCLMULQDQ && x.HasAVX && x.HasBMI2 &&
		x.HasAVX512F && x.HasAVX512BW && x.HasAVX512VL &&
		x.HasAVX512VAES && x.HasAVX512VPCLMULQDQ
}

// vaesGCM is AES-GCM on VAES and VPCLMULQDQ. It is never written after
// newVAES returns, so one value serves concurrent callers.
type vaesGCM struct {
	ks     [240]byte      // round keys
	rounds int            // 10 or 14
	gtab   [gtabSize]byte // GHASH key powers, see makeGHASHTable
}

var (
	_ cipher.AEAD   = (*vaesGCM)(nil)
	_ TrailerSealer = (*vaesGCM)(nil)
)

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
	checkOverlap(out, plaintext, additionalData)
	n := len(plaintext)
	var ctr, tagMask, x [16]byte
	copy(ctr[:], nonce)
	ctr[15] = 1
	bulk := n &^ 255
	if n <= shortMax && fitsLast(len(additionalData), n) {
		// The tag mask and the ciphertext from one keystream call (see
		// shortMax).
		var buf [blockSize + shortMax]byte
		copy(buf[blockSize:], plaintext)
		ctrXor(&g.ks, g.rounds, &ctr, &buf[0], &buf[0], blockSize+n)
		tagMask = [16]byte(buf[:blockSize])
		copy(out, buf[blockSize:blockSize+n])
		g.ghashLast(&x, additionalData, out[:n], len(additionalData), n)
	} else if bulk == 0 && fitsLast(len(additionalData), n) {
		aesEncBlock(&g.ks, g.rounds, &tagMask, &ctr)
		ctr[15] = 2
		ctrXor(&g.ks, g.rounds, &ctr, &out[0], &plaintext[0], n)
		g.ghashLast(&x, additionalData, out[:n], len(additionalData), n)
	} else {
		j0 := ctr
		ctr[15] = 2
		g.ghash(&x, additionalData)
		for done := 0; done < bulk; done += bulkChunk {
			binary.BigEndian.PutUint32(ctr[12:], 2+uint32(done/blockSize))
			sealBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &out[done], &plaintext[done], min(bulk-done, bulkChunk))
		}
		if bulk < n {
			binary.BigEndian.PutUint32(ctr[12:], 2+uint32(bulk/blockSize))
			ctrXor(&g.ks, g.rounds, &ctr, &out[bulk], &plaintext[bulk], n-bulk)
		}
		// The tag mask is needed last: encrypted here, its latency
		// overlaps the final hashing instead of delaying the bulk loop.
		aesEncBlock(&g.ks, g.rounds, &tagMask, &j0)
		g.ghashLast(&x, nil, out[bulk:n], len(additionalData), n)
	}
	writeTag((*[16]byte)(out[n:]), &x, &tagMask)
	return ret
}

// SealTrailer is Seal of plaintext followed by the byte trailer, without
// plaintext being copied to append it (see TrailerSealer). The bulk loop
// takes plaintext where it is; what is left of it (under 256 bytes) and
// the trailer are laid out here and go through the tail path together. It
// repeats Seal's steps rather than sharing them: as a function call they
// would slow Seal down on short messages.
func (g *vaesGCM) SealTrailer(dst, nonce, plaintext []byte, trailer byte, additionalData []byte) []byte {
	if len(nonce) != nonceSize {
		panic("aesgcm: incorrect nonce length given to GCM")
	}
	if uint64(len(plaintext)) >= maxPlaintext {
		panic("aesgcm: message too large for GCM")
	}
	ret, out := sliceForAppend(dst, len(plaintext)+1+tagSize)
	checkOverlap(out, plaintext, additionalData)
	bulk := len(plaintext) &^ 255
	var tail [256]byte
	k := copy(tail[:], plaintext[bulk:])
	tail[k] = trailer
	if bulk == 0 {
		// All of it is in tail, which does not overlap out.
		return g.Seal(dst, nonce, tail[:k+1], additionalData)
	}
	n := bulk + k + 1
	var ctr, tagMask, x [16]byte
	copy(ctr[:], nonce)
	ctr[15] = 1
	j0 := ctr
	g.ghash(&x, additionalData)
	for done := 0; done < bulk; done += bulkChunk {
		binary.BigEndian.PutUint32(ctr[12:], 2+uint32(done/blockSize))
		sealBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &out[done], &plaintext[done], min(bulk-done, bulkChunk))
	}
	binary.BigEndian.PutUint32(ctr[12:], 2+uint32(bulk/blockSize))
	ctrXor(&g.ks, g.rounds, &ctr, &out[bulk], &tail[0], k+1)
	aesEncBlock(&g.ks, g.rounds, &tagMask, &j0) // late, as in Seal
	g.ghashLast(&x, nil, out[bulk:n], len(additionalData), n)
	writeTag((*[16]byte)(out[n:]), &x, &tagMask)
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
	checkOverlap(out, ciphertext, additionalData)
	var ctr, tagMask, x, want [16]byte
	copy(ctr[:], nonce)
	ctr[15] = 1
	// Decryption runs with hashing, as in crypto/cipher, so out holds
	// plaintext before the tag is checked and is cleared if it fails. The
	// ciphertext is always hashed before an in-place decrypt overwrites it.
	bulk := n &^ 255
	if n <= shortMax && fitsLast(len(additionalData), n) {
		g.ghashLast(&x, additionalData, ciphertext[:n], len(additionalData), n)
		var buf [blockSize + shortMax]byte
		copy(buf[blockSize:], ciphertext[:n])
		ctrXor(&g.ks, g.rounds, &ctr, &buf[0], &buf[0], blockSize+n)
		tagMask = [16]byte(buf[:blockSize])
		copy(out, buf[blockSize:blockSize+n])
	} else if bulk == 0 && fitsLast(len(additionalData), n) {
		aesEncBlock(&g.ks, g.rounds, &tagMask, &ctr)
		ctr[15] = 2
		g.ghashLast(&x, additionalData, ciphertext[:n], len(additionalData), n)
		ctrXor(&g.ks, g.rounds, &ctr, &out[0], &ciphertext[0], n)
	} else {
		j0 := ctr
		ctr[15] = 2
		g.ghash(&x, additionalData)
		for done := 0; done < bulk; done += bulkChunk {
			binary.BigEndian.PutUint32(ctr[12:], 2+uint32(done/blockSize))
			openBulk(&g.ks, g.rounds, &g.gtab, &ctr, &x, &out[done], &ciphertext[done], min(bulk-done, bulkChunk))
		}
		aesEncBlock(&g.ks, g.rounds, &tagMask, &j0) // late, as in Seal
		g.ghashLast(&x, nil, ciphertext[bulk:n], len(additionalData), n)
		if bulk < n {
			binary.BigEndian.PutUint32(ctr[12:], 2+uint32(bulk/blockSize))
			ctrXor(&g.ks, g.rounds, &ctr, &out[bulk], &ciphertext[bulk], n-bulk)
		}
	}
	writeTag(&want, &x, &tagMask)
	if subtle.ConstantTimeCompare(want[:], ciphertext[n:]) != 1 {
		// Like crypto/cipher: no unauthenticated plaintext is left behind,
		// and a failed in-place Open looks the same on every platform.
		clear(out)
		return nil, errOpen
	}
	return ret, nil
}

// checkOverlap panics, as crypto/cipher does, when out overlaps in other
// than exactly or overlaps the additional data.
func checkOverlap(out, in, additionalData []byte) {
	if inexactOverlap(out, in) {
		panic("aesgcm: invalid buffer overlap of output and input")
	}
	if anyOverlap(out, additionalData) {
		panic("aesgcm: invalid buffer overlap of output and additional data")
	}
}

// bulkChunk is the most the stitched loops get per call (a multiple of
// 512). Assembly is not preemptible, so a huge message in one call would
// hold off the scheduler and the garbage collector's stop-the-world for
// the whole message; 64 KiB takes a few microseconds.
const bulkChunk = 64 << 10

// ghash absorbs data, zero-padded to whole blocks, into the GHASH state x.
func (g *vaesGCM) ghash(x *[16]byte, data []byte) {
	for len(data) > 0 { // in chunks of whole blocks, as for the bulk loops
		n := min(len(data), bulkChunk)
		ghashUpdate(&g.gtab[gtabH16], x, &data[0], n)
		data = data[n:]
	}
}

// shortMax is the longest message sealed and opened by one keystream call
// from counter 1 over a zero block followed by the message: the block's
// keystream is the tag mask (E(K, J0)) and the rest the ciphertext, so the
// mask is computed alongside the message instead of by a block encryption
// before it, whose latency is most of a short message's time.
const shortMax = 240

// lastBuf is the size of the buffer in which ghashLast lays out what is
// left to hash: a tail of fewer than 256 ciphertext bytes and the
// lengths block, or all of a small message.
const lastBuf = 256 + 2*blockSize

func roundUp16(n int) int { return (n + blockSize - 1) &^ (blockSize - 1) }

// fitsLast reports whether additional data and ciphertext of these
// lengths fit ghashLast's buffer together.
func fitsLast(adLen, ctLen int) bool {
	return roundUp16(adLen)+roundUp16(ctLen)+blockSize <= lastBuf
}

// ghashLast absorbs ad and ct, each zero-padded to whole blocks, and the
// lengths block for a message of adLen and ctLen bytes into x. Laying
// them out in one buffer hashes them in one call with one reduction per
// sixteen blocks, instead of one chain of reductions per piece; short
// messages are dominated by that latency.
func (g *vaesGCM) ghashLast(x *[16]byte, ad, ct []byte, adLen, ctLen int) {
	if len(ad) == 0 && len(ct) == 0 {
		// Only the lengths block (a message of whole 256-byte units):
		// one multiply by H, a third of the latency of a call through
		// the four-lane kernel. Byte-reversed, the block's second half
		// (the ciphertext's length) is the low qword.
		binary.LittleEndian.PutUint64(x[:8], binary.LittleEndian.Uint64(x[:8])^uint64(ctLen)*8)
		binary.LittleEndian.PutUint64(x[8:], binary.LittleEndian.Uint64(x[8:])^uint64(adLen)*8)
		gfMul(x, (*[16]byte)(g.gtab[(gtabPowers-1)*16:]))
		return
	}
	var buf [lastBuf]byte
	off := roundUp16(copy(buf[:], ad))
	off = roundUp16(off + copy(buf[off:], ct))
	binary.BigEndian.PutUint64(buf[off:], uint64(adLen)*8)
	binary.BigEndian.PutUint64(buf[off+8:], uint64(ctLen)*8)
	ghashUpdate(&g.gtab[gtabH16], x, &buf[0], off+blockSize)
}

// writeTag writes GCM's tag, the GHASH state x XOR tagMask, into t.
func writeTag(t, x, tagMask *[16]byte) {
	// x is byte-reversed: its high qword is the block's first eight bytes.
	binary.BigEndian.PutUint64(t[:8], binary.LittleEndian.Uint64(x[8:])^binary.BigEndian.Uint64(tagMask[:8]))
	binary.BigEndian.PutUint64(t[8:], binary.LittleEndian.Uint64(x[:8])^binary.BigEndian.Uint64(tagMask[8:]))
}

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

// gfMul sets x to x·y in GHASH's field, both in the representation of
// makeGHASHTable.
//
//go:noescape
func gfMul(x, y *[16]byte)
