package tlsrec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"sync"
)

// suite is what the record layer needs of a TLS 1.3 AES-GCM cipher suite.
type suite struct {
	hash   func() hash.Hash
	keyLen int
}

// suiteFor returns the record-layer parameters of id, or false for a suite
// the record layer does not carry (ChaCha20-Poly1305, anything not TLS 1.3).
func suiteFor(id uint16) (suite, bool) {
	switch id {
	case tls.TLS_AES_128_GCM_SHA256:
		return suite{hash: sha256.New, keyLen: 16}, true
	case tls.TLS_AES_256_GCM_SHA384:
		return suite{hash: sha512.New384, keyLen: 32}, true
	}
	return suite{}, false
}

// expandLabel is HKDF-Expand-Label of RFC 8446 §7.1 with an empty context,
// the only form the record layer needs ("key", "iv", "traffic upd").
func expandLabel(h func() hash.Hash, secret []byte, label string, length int) ([]byte, error) {
	const prefix = "tls13 "
	info := make([]byte, 0, 4+len(prefix)+len(label))
	info = binary.BigEndian.AppendUint16(info, uint16(length))
	info = append(info, byte(len(prefix)+len(label)))
	info = append(info, prefix...)
	info = append(info, label...)
	info = append(info, 0) // empty context
	return hkdf.Expand(h, secret, string(info), length)
}

// defaultAEAD is crypto/aes with crypto/cipher's GCM.
func defaultAEAD(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// The NSS key log labels of the first application traffic secrets.
const (
	clientTrafficLabel = "CLIENT_TRAFFIC_SECRET_0"
	serverTrafficLabel = "SERVER_TRAFFIC_SECRET_0"
)

// keyCapture is a KeyLogWriter for one connection: crypto/tls hands it the
// handshake's secrets as NSS key log lines, and it keeps the two
// application traffic secrets. Lines still go to the configuration's own
// KeyLogWriter when it had one.
type keyCapture struct {
	mu      sync.Mutex
	forward io.Writer
	client  []byte
	server  []byte
	// writeLabel is the label of this side's own application traffic
	// secret; onWriteSecret runs when crypto/tls logs it (from the
	// handshake's goroutine, before it writes anything under it).
	writeLabel    string
	onWriteSecret func()
}

func (k *keyCapture) Write(line []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.forward != nil {
		if _, err := k.forward.Write(line); err != nil {
			return 0, err
		}
	}
	label, rest, ok := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{' '})
	if !ok {
		return len(line), nil
	}
	var dst *[]byte
	switch string(label) {
	case clientTrafficLabel:
		dst = &k.client
	case serverTrafficLabel:
		dst = &k.server
	default:
		return len(line), nil
	}
	_, secretHex, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return 0, errors.New("tlsrec: malformed key log line")
	}
	secret := make([]byte, hex.DecodedLen(len(secretHex)))
	if _, err := hex.Decode(secret, secretHex); err != nil {
		clear(secret)
		return 0, errors.New("tlsrec: malformed key log line")
	}
	clear(*dst)
	*dst = secret
	if string(label) == k.writeLabel && k.onWriteSecret != nil {
		k.onWriteSecret()
	}
	return len(line), nil
}

// take returns the captured client and server traffic secrets and forgets
// them; the caller owns (and eventually clears) the bytes.
func (k *keyCapture) take() (client, server []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	client, server = k.client, k.server
	k.client, k.server = nil, nil
	return client, server
}

// wipe clears whatever was captured.
func (k *keyCapture) wipe() {
	c, s := k.take()
	clear(c)
	clear(s)
}
