package aesgcm

import "crypto/cipher"

func isVAES(a cipher.AEAD) bool {
	_, ok := a.(*vaesGCM)
	return ok
}
