// Package aesgcm is AES-GCM (12-byte nonce, 16-byte tag) for the gateway's
// optional fast path (gateway_crypto: fast): envelope encryption and the
// TLS 1.3 record layer. On amd64 CPUs with VAES, VPCLMULQDQ and AVX-512 it
// encrypts four blocks per instruction and hashes sixteen blocks per GHASH
// reduction, several times the throughput of crypto/cipher's GCM;
// elsewhere New returns crypto/cipher's GCM. Both produce identical bytes.
// Select resolves the XP_AESGCM environment variable into the
// implementation to use.
//
// Key expansion runs in constant time: SubWord is the AESENCLAST
// instruction, never a table indexed by key bytes.
//
// The 32-bit block counter starts at 2 for every nonce and cannot wrap:
// messages are limited to 2^32-2 blocks (just under 64 GiB), as in the
// GCM specification, and Seal panics above that as crypto/cipher does.
// The assembly increments only the counter's 32 bits, wrapping without a
// carry into the nonce, which its tests check from counters near 2^32.
package aesgcm

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"strconv"
)

const (
	nonceSize = 12
	tagSize   = 16
	blockSize = 16
	// maxPlaintext is GCM's limit for a 12-byte nonce: the 32-bit counter
	// has 2^32-2 values left after the one that masks the tag.
	maxPlaintext = (1<<32 - 2) * blockSize
)

// EnvSelect is the environment variable Select reads: unset, empty or
// "auto" (VAES where the CPU has it), "std" (crypto/cipher's GCM even on a
// CPU with VAES) or "vaes" (VAES, an error on a CPU without it). Any other
// value is an error.
const EnvSelect = "XP_AESGCM"

// Implementation names, as recorded with each attempt.
const (
	NameVAES = "aesgcm-vaes"
	NameStd  = "crypto/cipher"
)

// Impl is a chosen AES-GCM implementation.
type Impl struct {
	// Name is NameVAES or NameStd.
	Name string
	// New makes the AEAD for a 16- or 32-byte key.
	New func(key []byte) (cipher.AEAD, error)
	// Why says why VAES was not chosen; empty when it was.
	Why string
}

// Select returns the implementation the fast path uses under XP_AESGCM=v
// (see EnvSelect).
func Select(v string) (Impl, error) {
	vaes := Impl{Name: NameVAES, New: func(k []byte) (cipher.AEAD, error) { return newAEAD(k, true) }}
	std := Impl{Name: NameStd, New: NewStd}
	switch v {
	case "", "auto":
		if !cpuHasVAES {
			std.Why = "this CPU lacks VAES/VPCLMULQDQ/AVX-512"
			return std, nil
		}
		return vaes, nil
	case "std":
		std.Why = EnvSelect + "=std"
		return std, nil
	case "vaes":
		if !cpuHasVAES {
			return Impl{}, fmt.Errorf("%s=vaes, but this CPU lacks VAES/VPCLMULQDQ/AVX-512 (use auto or std)", EnvSelect)
		}
		return vaes, nil
	}
	return Impl{}, fmt.Errorf("%s=%q: want auto, std or vaes (unset means auto)", EnvSelect, v)
}

// errOpen is what Open returns when the tag does not match.
var errOpen = errors.New("aesgcm: message authentication failed")

// TrailerSealer is implemented by the AEADs New returns on CPUs with VAES.
// SealTrailer(dst, nonce, p, t, ad) is Seal(dst, nonce, append(p, t), ad),
// without the caller copying p to append the byte: TLS 1.3 seals each
// record's content followed by its content type, and the copy would cost
// as much as a quarter of the seal.
type TrailerSealer interface {
	SealTrailer(dst, nonce, plaintext []byte, trailer byte, additionalData []byte) []byte
}

// KeySizeError is returned by New for a key that is neither 16 nor 32 bytes.
type KeySizeError int

func (k KeySizeError) Error() string {
	return "aesgcm: invalid key size " + strconv.Itoa(int(k)) + " (want 16 or 32)"
}

// New returns an AES-GCM AEAD for a 16- or 32-byte key with the standard
// 12-byte nonce and 16-byte tag: the VAES implementation when the CPU has
// it, else crypto/cipher's GCM.
func New(key []byte) (cipher.AEAD, error) {
	return newAEAD(key, cpuHasVAES)
}

// Accelerated reports whether this CPU runs the VAES implementation.
func Accelerated() bool { return cpuHasVAES }

// newAEAD returns the VAES implementation when vaes is true (the caller
// has checked the CPU), else crypto/cipher's GCM.
func newAEAD(key []byte, vaes bool) (cipher.AEAD, error) {
	if len(key) != 16 && len(key) != 32 {
		return nil, KeySizeError(len(key))
	}
	if vaes {
		return newVAES(key), nil
	}
	return NewStd(key)
}

// NewStd is Go's own AES-GCM (crypto/aes with crypto/cipher), what New
// falls back to and what crypto/tls uses: the comparison for benchmarks.
func NewStd(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
