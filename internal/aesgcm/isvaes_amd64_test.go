package aesgcm

import "crypto/cipher"

func isVAES(a cipher.AEAD) bool {
	_, ok := a.(*vaesGCM)
	return ok
}

func encryptBlockForTest(key []byte, dst, src *[16]byte) {
	var ks [240]byte
	rounds := expandKey(&ks, key)
	aesEncBlock(&ks, rounds, dst, src)
}
