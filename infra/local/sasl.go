package local

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SASL mechanisms the sasl_ssl fronts accept.
const (
	MechPlain       = "PLAIN"
	MechScramSHA256 = "SCRAM-SHA-256"
	MechScramSHA512 = "SCRAM-SHA-512"
	scramIterations = 4096
)

var errAuth = errors.New("authentication failed: invalid credentials")

// scramHashes are the hash of each SCRAM mechanism (RFC 7677, RFC 5802).
var scramHashes = map[string]func() hash.Hash{MechScramSHA256: sha256.New, MechScramSHA512: sha512.New}

// credential is one user's secret in every form: the password for PLAIN
// and, per SCRAM mechanism, the SCRAM keys, derived once so a handshake
// costs two HMACs.
type credential struct {
	password string
	scram    map[string]*scramKeys
}

// scramKeys are a password's SCRAM keys under one hash (RFC 5802).
type scramKeys struct {
	hash      func() hash.Hash
	salt      []byte
	storedKey []byte
	serverKey []byte
}

func newCredential(password string) (*credential, error) {
	c := &credential{password: password, scram: map[string]*scramKeys{}}
	for mech, h := range scramHashes {
		salt := make([]byte, 16)
		rand.Read(salt)
		salted, err := pbkdf2.Key(h, password, salt, scramIterations, h().Size())
		if err != nil {
			return nil, err
		}
		k := &scramKeys{hash: h, salt: salt, serverKey: hmacSum(h, salted, "Server Key")}
		k.storedKey = hashSum(h, hmacSum(h, salted, "Client Key"))
		c.scram[mech] = k
	}
	return c, nil
}

func hmacSum(h func() hash.Hash, key []byte, msg string) []byte {
	m := hmac.New(h, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func hashSum(h func() hash.Hash, b []byte) []byte {
	d := h()
	d.Write(b)
	return d.Sum(nil)
}

// saslSession verifies one client's SASL exchange, one token at a time.
type saslSession interface {
	// step consumes a client token and returns the server's reply and
	// whether authentication is complete.
	step(in []byte) (out []byte, done bool, err error)
}

func newSASLSession(mech string, users map[string]*credential) (saslSession, bool) {
	switch mech {
	case MechPlain:
		return &plainSession{users: users}, true
	case MechScramSHA256, MechScramSHA512:
		return &scramSession{mech: mech, users: users}, true
	}
	return nil, false
}

type plainSession struct{ users map[string]*credential }

func (s *plainSession) step(in []byte) ([]byte, bool, error) {
	parts := strings.Split(string(in), "\x00")
	if len(parts) != 3 {
		return nil, false, errors.New("malformed PLAIN message")
	}
	authz, user, pass := parts[0], parts[1], parts[2]
	if authz != "" && authz != user {
		return nil, false, errAuth
	}
	c, ok := s.users[user]
	if !ok || subtle.ConstantTimeCompare([]byte(c.password), []byte(pass)) != 1 {
		return nil, false, errAuth
	}
	return nil, true, nil
}

// scramSession is the server side of SCRAM-SHA-256 or SCRAM-SHA-512
// (mech) without channel binding.
type scramSession struct {
	mech        string
	users       map[string]*credential
	cred        *scramKeys
	gs2         string
	nonce       string
	clientFirst string // bare
	serverFirst string
	stage       int
}

func (s *scramSession) step(in []byte) ([]byte, bool, error) {
	msg := string(in)
	switch s.stage {
	case 0:
		s.stage++
		var bare string
		switch {
		case strings.HasPrefix(msg, "n,"), strings.HasPrefix(msg, "y,"):
			i := strings.Index(msg[2:], ",")
			if i < 0 {
				return nil, false, errors.New("malformed SCRAM client-first message")
			}
			s.gs2 = msg[:2+i+1]
			bare = msg[2+i+1:]
		default:
			return nil, false, errors.New("SCRAM channel binding is not supported")
		}
		attrs := scramAttrs(bare)
		user := strings.NewReplacer("=2C", ",", "=3D", "=").Replace(attrs["n"])
		cnonce := attrs["r"]
		if user == "" || cnonce == "" {
			return nil, false, errors.New("malformed SCRAM client-first message")
		}
		c, ok := s.users[user]
		if !ok {
			return nil, false, errAuth
		}
		snonce := make([]byte, 18)
		rand.Read(snonce)
		s.cred = c.scram[s.mech]
		s.clientFirst = bare
		s.nonce = cnonce + base64.RawURLEncoding.EncodeToString(snonce)
		s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(s.cred.salt) + ",i=" + strconv.Itoa(scramIterations)
		return []byte(s.serverFirst), false, nil
	case 1:
		s.stage++
		i := strings.LastIndex(msg, ",p=")
		if i < 0 {
			return nil, false, errors.New("malformed SCRAM client-final message")
		}
		withoutProof := msg[:i]
		proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
		if err != nil {
			return nil, false, errors.New("malformed SCRAM proof")
		}
		attrs := scramAttrs(withoutProof)
		// librdkafka echoes its client nonce in front of the combined
		// nonce; Kafka's broker accepts any echo that ends with the
		// server-first nonce, and so do we.
		if !strings.HasSuffix(attrs["r"], s.nonce) {
			return nil, false, errors.New("SCRAM nonce mismatch")
		}
		if attrs["c"] != base64.StdEncoding.EncodeToString([]byte(s.gs2)) {
			return nil, false, errors.New("SCRAM channel binding mismatch")
		}
		authMsg := s.clientFirst + "," + s.serverFirst + "," + withoutProof
		sig := hmacSum(s.cred.hash, s.cred.storedKey, authMsg)
		if len(proof) != len(sig) {
			return nil, false, errAuth
		}
		clientKey := make([]byte, len(sig))
		for j := range sig {
			clientKey[j] = proof[j] ^ sig[j]
		}
		if subtle.ConstantTimeCompare(hashSum(s.cred.hash, clientKey), s.cred.storedKey) != 1 {
			return nil, false, errAuth
		}
		return []byte("v=" + base64.StdEncoding.EncodeToString(hmacSum(s.cred.hash, s.cred.serverKey, authMsg))), true, nil
	}
	return nil, false, fmt.Errorf("unexpected SCRAM message after completion")
}

func scramAttrs(s string) map[string]string {
	m := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if len(kv) >= 2 && kv[1] == '=' {
			m[kv[:1]] = kv[2:]
		}
	}
	return m
}
