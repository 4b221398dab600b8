//go:build !amd64

package aesgcm

import "crypto/cipher"

func isVAES(cipher.AEAD) bool { return false }

func encryptBlockForTest(key []byte, dst, src *[16]byte) {
	panic("no VAES implementation on this architecture")
}
