//go:build !amd64

package aesgcm

import "crypto/cipher"

const cpuHasVAES = false

func newVAES(key []byte) cipher.AEAD {
	panic("aesgcm: VAES implementation requested on a CPU without it")
}
