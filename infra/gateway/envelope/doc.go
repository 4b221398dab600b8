// Package envelope is the gateway's cryptography: AES-256-GCM envelope
// encryption with a data key per topic and gateway, data keys wrapped by
// key-encryption keys (KEKs) from a file vault, and a versioned wire format
// whose additional authenticated data binds the topic and field path.
//
// # Keys
//
// A Vault is a 0600 key file of named KEKs (`ID BASE64KEY` a line); the
// last one wraps new data keys and all of them unwrap, so KEK rotation is
// adding a line and old data keeps decrypting. A Keyring generates a fresh
// random AES-256 data key per topic, wraps it under the active KEK
// (AES-256-GCM, random nonce, AAD = the envelope header up to and including
// the data key id), and replaces it after Options.MaxEncryptions
// encryptions or Options.MaxAge. Unwrapped data keys are cached with their
// cipher.AEAD, so steady-state decryption never touches the vault.
//
// # Wire format, version 1
//
//	offset      size  field
//	0           1     version = 0x01
//	1           1     n = length of the KEK id (1..64)
//	2           n     KEK id (ASCII: letters, digits, '-', '_', '.')
//	2+n         8     data key id (random)
//	10+n        60    wrapped data key: nonce(12) ‖ AES-256-GCM_KEK(data key)(32) ‖ tag(16)
//	70+n        12    nonce
//	82+n        L+16  AES-256-GCM_datakey(plaintext)(L) ‖ tag(16)
//
// Everything before the nonce is the header; it is the same for every
// record under one data key, so a decrypting gateway that has seen it once
// finds the unwrapped key by comparing bytes. The overhead is 98+n bytes.
//
// The additional authenticated data of a record is
//
//	header ‖ topic ‖ 0x00 ‖ field path
//
// where the field path is empty for a whole value, the field's name for
// field encryption, "key" for a record key and "header:NAME" for the value
// of header NAME. An envelope moved to another topic or another field, or
// any flipped bit anywhere in it (header included), fails the tag: ErrAuth.
// An envelope whose KEK id is not in the vault gives ErrUnknownKEK; one
// that is too short or of another version gives ErrMalformed.
//
// The additional data covers nothing else: not the partition, offset,
// timestamp or producer ids; not the record key or other headers unless
// they are encrypted themselves; not the record's marker header (package
// encrypt). So a whole record copied to another partition or offset of the
// same topic, or replayed, still decrypts, and a deleted record is not
// noticed. The marker is left out on purpose: each envelope already binds
// the one place it may be opened (topic and field path), so rewriting the
// marker can only make the gateway leave an envelope unopened (the
// consumer sees ciphertext, never forged plaintext) or try to open bytes
// that are no envelope (refused); binding the marker would also need the
// set of fields a record holds before its first field is sealed, a second
// pass over every record. A marker removed altogether, or plaintext
// written straight to the brokers, is what the gateway's
// require_encryption option refuses.
//
// # Nonces never repeat under one key
//
// The nonce is a 4-byte random prefix fixed per data key followed by a
// 64-bit big-endian counter. Each data key starts its counter at a random
// value below 2^63 and hands out values by an atomic increment, and the key
// is retired before the counter has advanced Options.MaxEncryptions
// (≤ 2^62) times, so the counter never wraps and no value is handed out
// twice. A data key only ever encrypts inside the gateway process that
// generated it: it is created in memory, never persisted unwrapped, and a
// restarted gateway generates new keys instead of resuming old ones, so
// there is no second counter for the same key anywhere. Other gateways and
// later processes only decrypt with it. The random start and prefix are not
// needed for uniqueness; they make nonces unpredictable across keys.
//
// The record header that marks which records carry envelopes (and the
// format version) belongs to the gateway filter, package encrypt.
package envelope
