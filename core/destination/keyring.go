package destination

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Sealed is a secret encrypted with AES-256-GCM under one of the server's keys: KeyID names the
// key, Box is a random 12-byte nonce followed by the ciphertext and its tag.
type Sealed struct {
	KeyID string
	Box   []byte
}

// ErrUnknownKey is a Sealed value whose key the keyring no longer holds.
var ErrUnknownKey = errors.New("sealed with a key this server does not hold")

// Keyring holds the server's secret keys: the first seals, every one opens, so that keys can be
// rotated by putting a new one first and re-sealing (Reseal) before the old one is dropped.
type Keyring struct {
	ids  []string
	keys map[string]cipher.AEAD
}

// SecretKey is one named 32-byte key.
type SecretKey struct {
	ID     string
	Secret []byte
}

// NewKeyring returns a keyring of keys, the first sealing. IDs must be distinct, non-empty and
// free of ':' and ','; each secret 32 bytes.
func NewKeyring(keys ...SecretKey) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("keyring: no key")
	}
	k := &Keyring{keys: map[string]cipher.AEAD{}}
	for _, key := range keys {
		if key.ID == "" || strings.ContainsAny(key.ID, ":, ") {
			return nil, fmt.Errorf("keyring: key ID %q: use letters, digits, - or _", key.ID)
		}
		if _, dup := k.keys[key.ID]; dup {
			return nil, fmt.Errorf("keyring: key ID %q is given twice", key.ID)
		}
		if len(key.Secret) != 32 {
			return nil, fmt.Errorf("keyring: key %q is %d bytes; AES-256 needs 32", key.ID, len(key.Secret))
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		k.ids = append(k.ids, key.ID)
		k.keys[key.ID] = aead
	}
	return k, nil
}

// ParseKeys reads keys written "id:hex,id:hex" (64 hex digits each), the first sealing: the
// form of MEDIAJOBS_SECRET_KEYS. Errors never quote a key's secret.
func ParseKeys(s string) ([]SecretKey, error) {
	var out []SecretKey
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		id, hexKey, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("key %d: write it id:64-hex-digits", i+1)
		}
		secret, err := hex.DecodeString(hexKey)
		if err != nil || len(secret) != 32 {
			return nil, fmt.Errorf("key %d (%s): the key must be 64 hex digits (32 bytes)", i+1, id)
		}
		out = append(out, SecretKey{ID: id, Secret: secret})
	}
	return out, nil
}

// Current is the ID of the key that seals.
func (k *Keyring) Current() string { return k.ids[0] }

// Seal encrypts plain under the current key with a fresh random nonce. aad binds the value to
// its owner (a destination's ID): a box copied to another row does not open there.
func (k *Keyring) Seal(plain, aad string) (Sealed, error) {
	aead := k.keys[k.ids[0]]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, err
	}
	return Sealed{KeyID: k.ids[0], Box: aead.Seal(nonce, nonce, []byte(plain), []byte(aad))}, nil
}

// Open decrypts s, sealed with aad.
func (k *Keyring) Open(s Sealed, aad string) (string, error) {
	aead, ok := k.keys[s.KeyID]
	if !ok {
		return "", fmt.Errorf("key %q: %w", s.KeyID, ErrUnknownKey)
	}
	if len(s.Box) < aead.NonceSize()+aead.Overhead() {
		return "", errors.New("sealed value is too short")
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, s.Box[:n], s.Box[n:], []byte(aad))
	if err != nil {
		return "", fmt.Errorf("sealed value under key %q does not open: %w", s.KeyID, err)
	}
	return string(plain), nil
}

// Reseal opens s and seals it again under the current key; a value already under it is
// returned as is, with false.
func (k *Keyring) Reseal(s Sealed, aad string) (Sealed, bool, error) {
	if s.KeyID == k.Current() {
		return s, false, nil
	}
	plain, err := k.Open(s, aad)
	if err != nil {
		return Sealed{}, false, err
	}
	out, err := k.Seal(plain, aad)
	return out, err == nil, err
}
