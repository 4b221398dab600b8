package tlsrec

import "crypto/cipher"

type cipherAEAD = cipher.AEAD
