package envelope

import (
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xp-bench/xp/internal/aesgcm"
)

// Wire-format constants (see doc.go).
const (
	// Version1 is the only envelope format version so far.
	Version1 byte = 1
	// NonceSize is the AES-GCM nonce size.
	NonceSize = 12
	// TagSize is the AES-GCM tag size.
	TagSize = 16
	// DataKeyIDSize is the size of the random data key id.
	DataKeyIDSize = 8
	// WrappedKeySize is a data key wrapped by a KEK: nonce, key, tag.
	WrappedKeySize = NonceSize + KeySize + TagSize
)

// Overhead is how many bytes an envelope adds to its plaintext for a
// key-encryption key id of kekIDLen bytes.
func Overhead(kekIDLen int) int {
	return 2 + kekIDLen + DataKeyIDSize + WrappedKeySize + NonceSize + TagSize
}

// Errors callers branch on. Decryption never returns partial plaintext.
var (
	// ErrAuth means the tag did not verify: the envelope was altered, or it
	// was moved to another topic or field, or it was made under another key.
	ErrAuth = errors.New("envelope: authentication failed (tampered, or wrong topic/field/key)")
	// ErrMalformed means the bytes are not an envelope of a known version.
	ErrMalformed = errors.New("envelope: malformed or unknown version")
)

// Options tune a Keyring; zero values take the defaults.
type Options struct {
	// MaxEncryptions is how many encryptions one data key performs before a
	// fresh one replaces it. Default 1<<32 (the usual bound for AES-GCM
	// under one key); at most 1<<62.
	MaxEncryptions uint64
	// MaxAge is how long one data key encrypts before a fresh one replaces
	// it. Default 1h.
	MaxAge time.Duration
	// CacheSize bounds the unwrapped data keys kept for decryption.
	// Default 4096.
	CacheSize int
	// Now is the clock; default time.Now.
	Now func() time.Time
	// NewAEAD makes the AES-256-GCM of data keys and key wrapping; default
	// crypto/cipher's (aesgcm.NewStd). The gateway's crypto fast hands in
	// aesgcm's VAES implementation (Keyring.UseCipher).
	NewAEAD func(key []byte) (cipher.AEAD, error)
}

func (o Options) withDefaults() Options {
	if o.MaxEncryptions == 0 {
		o.MaxEncryptions = 1 << 32
	}
	if o.MaxEncryptions > 1<<62 {
		o.MaxEncryptions = 1 << 62
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Hour
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewAEAD == nil {
		o.NewAEAD = aesgcm.NewStd
	}
	return o
}

// Keyring hands out data keys per topic, wraps them with the vault's active
// key-encryption key, and unwraps and caches the data keys named by
// envelopes it is asked to open. One Keyring belongs to one gateway
// process: its data keys are generated in memory and never leave it except
// wrapped inside envelopes, which is why a per-key in-memory nonce counter
// is enough (see doc.go). Safe for concurrent use.
type Keyring struct {
	opts    Options
	vault   atomic.Pointer[Vault]
	newAEAD atomic.Pointer[func([]byte) (cipher.AEAD, error)]

	mu      sync.Mutex
	current map[string]*dataKey // topic → data key that encrypts now
	rotated atomic.Uint64

	cacheMu sync.RWMutex
	cache   map[string]*dataKey // envelope header (after the version byte) → key

	format formatKeys // FF1 ciphers of field_cipher fpe (format.go)
}

// dataKey is one AES-256 data key with its cached AEAD.
type dataKey struct {
	aead cipher.AEAD
	// header is the envelope prefix every record under this key starts
	// with: version, KEK id length, KEK id, data key id, wrapped key.
	header []byte
	// Encryption state, unused for keys only opened.
	noncePrefix [4]byte
	counter     atomic.Uint64
	limit       uint64
	expires     time.Time
	retired     atomic.Bool
}

// NewKeyring builds a keyring over the vault.
func NewKeyring(v *Vault, o Options) *Keyring {
	k := &Keyring{opts: o.withDefaults(), current: map[string]*dataKey{}, cache: map[string]*dataKey{}}
	k.vault.Store(v)
	k.newAEAD.Store(&k.opts.NewAEAD)
	return k
}

// UseCipher makes keys set up from now on use newAEAD (see
// Options.NewAEAD); keys already in use keep theirs.
func (k *Keyring) UseCipher(newAEAD func(key []byte) (cipher.AEAD, error)) {
	k.newAEAD.Store(&newAEAD)
}

// SetVault swaps in a re-read vault (KEK rotation: a key was added). Data
// keys wrapped by the previous active KEK stop encrypting at once; every
// envelope whose KEK is still in the new vault keeps opening.
func (k *Keyring) SetVault(v *Vault) {
	old := k.vault.Swap(v)
	k.forgetFormatKeys()
	if old != nil && old.ActiveID() == v.ActiveID() {
		return
	}
	k.mu.Lock()
	for t, dk := range k.current {
		dk.retired.Store(true)
		delete(k.current, t)
	}
	k.mu.Unlock()
}

// Reload re-reads the vault file and applies it with SetVault.
func (k *Keyring) Reload() error {
	v, err := OpenVault(k.vault.Load().Path())
	if err != nil {
		return err
	}
	k.SetVault(v)
	return nil
}

// ActiveKEK is the id of the key-encryption key that wraps new data keys.
func (k *Keyring) ActiveKEK() string { return k.vault.Load().ActiveID() }

// Rotations counts data keys generated so far (for tests and metrics).
func (k *Keyring) Rotations() uint64 { return k.rotated.Load() }

// currentKey returns the data key that encrypts for topic now, replacing
// it when it is exhausted, expired or retired (stale is the key the caller
// found unusable, nil if none).
func (k *Keyring) currentKey(topic string, stale *dataKey) (*dataKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	dk := k.current[topic]
	if dk != nil && dk != stale && !dk.retired.Load() && dk.counter.Load() < dk.limit && k.opts.Now().Before(dk.expires) {
		return dk, nil
	}
	if dk != nil {
		dk.retired.Store(true)
	}
	dk, err := k.newDataKey()
	if err != nil {
		return nil, err
	}
	k.current[topic] = dk
	k.rotated.Add(1)
	k.remember(dk)
	return dk, nil
}

func (k *Keyring) newDataKey() (*dataKey, error) {
	v := k.vault.Load()
	kekID := v.ActiveID()
	kek, _ := v.key(kekID)
	var secret [KeySize]byte
	var random [DataKeyIDSize + NonceSize + 4 + 8]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return nil, fmt.Errorf("envelope: data key: %w", err)
	}
	if _, err := rand.Read(random[:]); err != nil {
		return nil, fmt.Errorf("envelope: data key: %w", err)
	}
	hdr := make([]byte, 0, 2+len(kekID)+DataKeyIDSize+WrappedKeySize)
	hdr = append(hdr, Version1, byte(len(kekID)))
	hdr = append(hdr, kekID...)
	hdr = append(hdr, random[:DataKeyIDSize]...)
	wrapNonce := random[DataKeyIDSize : DataKeyIDSize+NonceSize]
	kekAEAD, err := k.newAEADFor(kek)
	if err != nil {
		return nil, err
	}
	wrapAAD := hdr
	hdr = append(hdr, wrapNonce...)
	hdr = kekAEAD.Seal(hdr, wrapNonce, secret[:], wrapAAD)
	aead, err := k.newAEADFor(secret[:])
	if err != nil {
		return nil, err
	}
	dk := &dataKey{aead: aead, header: hdr, expires: k.opts.Now().Add(k.opts.MaxAge)}
	copy(dk.noncePrefix[:], random[DataKeyIDSize+NonceSize:])
	// Random start in [0, 2^63): start+MaxEncryptions (≤ 2^62) never wraps,
	// so every counter value handed out under this key is distinct.
	start := binary.BigEndian.Uint64(random[DataKeyIDSize+NonceSize+4:]) & math.MaxInt64
	dk.counter.Store(start)
	dk.limit = start + k.opts.MaxEncryptions
	return dk, nil
}

// newAEADFor makes the keyring's AES-256-GCM (Options.NewAEAD, UseCipher).
func (k *Keyring) newAEADFor(key []byte) (cipher.AEAD, error) { return (*k.newAEAD.Load())(key) }

// remember puts an unwrapped key in the bounded cache.
func (k *Keyring) remember(dk *dataKey) {
	k.cacheMu.Lock()
	if len(k.cache) >= k.opts.CacheSize {
		// Evict about half, arbitrarily: keys are cheap to unwrap again,
		// and the working set is a few keys per topic.
		n := 0
		for key := range k.cache {
			delete(k.cache, key)
			if n++; n >= k.opts.CacheSize/2+1 {
				break
			}
		}
	}
	k.cache[string(dk.header[1:])] = dk
	k.cacheMu.Unlock()
}

// lookup finds or unwraps the data key named by an envelope header.
func (k *Keyring) lookup(hdr []byte) (*dataKey, error) {
	k.cacheMu.RLock()
	dk := k.cache[string(hdr[1:])]
	k.cacheMu.RUnlock()
	if dk != nil {
		return dk, nil
	}
	n := int(hdr[1])
	kekID := hdr[2 : 2+n]
	kek, ok := k.vault.Load().key(string(kekID))
	if !ok {
		return nil, ErrUnknownKEK
	}
	kekAEAD, err := k.newAEADFor(kek)
	if err != nil {
		return nil, err
	}
	idEnd := 2 + n + DataKeyIDSize
	wrapped := hdr[idEnd:]
	secret, err := kekAEAD.Open(nil, wrapped[:NonceSize], wrapped[NonceSize:], hdr[:idEnd])
	if err != nil {
		return nil, ErrAuth
	}
	aead, err := k.newAEADFor(secret)
	if err != nil {
		return nil, err
	}
	dk = &dataKey{aead: aead, header: bytes.Clone(hdr)}
	dk.retired.Store(true)
	k.remember(dk)
	return dk, nil
}

// Sealer encrypts records of one topic. It caches the topic's data key and
// the additional data, so sealing allocates nothing; it is not safe for
// concurrent use (take one per goroutine, or per batch from a pool).
type Sealer struct {
	k      *Keyring
	topic  string
	dk     *dataKey
	field  string
	aad    []byte
	aadKey *dataKey
	nonce  [NonceSize]byte
	seals  uint32
}

// Sealer returns a sealer for topic.
func (k *Keyring) Sealer(topic string) *Sealer {
	return &Sealer{k: k, topic: topic}
}

// Reset points the sealer at another topic (or the same one again, which
// re-checks the data key's age).
func (s *Sealer) Reset(topic string) {
	if topic != s.topic {
		s.topic = topic
		s.dk = nil
		s.aadKey = nil
	} else if s.dk != nil && !s.k.opts.Now().Before(s.dk.expires) {
		s.dk = nil
	}
}

// Seal appends the envelope of plaintext, bound to the sealer's topic and
// to field ("" for a whole value), to dst.
func (s *Sealer) Seal(dst []byte, field string, plaintext []byte) ([]byte, error) {
	var n uint64
	for {
		dk := s.dk
		if dk == nil || dk.retired.Load() {
			var err error
			if dk, err = s.k.currentKey(s.topic, dk); err != nil {
				return dst, err
			}
			s.dk = dk
		}
		n = dk.counter.Add(1)
		if n < dk.limit {
			break
		}
		dk.retired.Store(true)
		s.dk = nil
	}
	if s.seals++; s.seals&1023 == 0 && !s.k.opts.Now().Before(s.dk.expires) {
		// Time-based rotation for long-lived sealers; this record still
		// uses the old key, which is harmless.
		s.dk.retired.Store(true)
	}
	dk := s.dk
	if s.aadKey != dk || s.field != field {
		s.aad = appendAAD(s.aad[:0], dk.header, s.topic, field)
		s.aadKey, s.field = dk, field
	}
	copy(s.nonce[:4], dk.noncePrefix[:])
	binary.BigEndian.PutUint64(s.nonce[4:], n)
	dst = append(dst, dk.header...)
	dst = append(dst, s.nonce[:]...)
	return dk.aead.Seal(dst, s.nonce[:], plaintext, s.aad), nil
}

// appendAAD is the additional authenticated data of a record: the envelope
// header, the topic, a zero byte (topic names never contain one) and the
// field path.
func appendAAD(dst, hdr []byte, topic, field string) []byte {
	dst = append(dst, hdr...)
	dst = append(dst, topic...)
	dst = append(dst, 0)
	return append(dst, field...)
}

// Opener decrypts envelopes. It remembers the last data key it used, so a
// batch under one key costs one lookup; not safe for concurrent use.
type Opener struct {
	k    *Keyring
	last *dataKey
	aad  []byte
}

// Opener returns an opener.
func (k *Keyring) Opener() *Opener { return &Opener{k: k} }

// HeaderLen returns the length of the envelope header (everything before
// the nonce) of env, or ErrMalformed.
func HeaderLen(env []byte) (int, error) {
	if len(env) < 2 || env[0] != Version1 || env[1] == 0 {
		return 0, ErrMalformed
	}
	h := 2 + int(env[1]) + DataKeyIDSize + WrappedKeySize
	if len(env) < h+NonceSize+TagSize {
		return 0, ErrMalformed
	}
	return h, nil
}

// Open appends the plaintext of env, which must have been sealed for topic
// and field, to dst. On any error dst is returned unchanged.
func (o *Opener) Open(dst []byte, topic, field string, env []byte) ([]byte, error) {
	h, err := HeaderLen(env)
	if err != nil {
		return dst, err
	}
	hdr := env[:h]
	dk := o.last
	if dk == nil || !bytes.Equal(dk.header, hdr) {
		if dk, err = o.k.lookup(hdr); err != nil {
			return dst, err
		}
		o.last = dk
	}
	o.aad = appendAAD(o.aad[:0], hdr, topic, field)
	out, err := dk.aead.Open(dst, env[h:h+NonceSize], env[h+NonceSize:], o.aad)
	if err != nil {
		return dst, ErrAuth
	}
	return out, nil
}
