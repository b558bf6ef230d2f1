// Package apikey generates and checks Flytrap API keys.
//
// A key looks like a GitHub token: the fixed prefix "ftk_", 30 base62
// characters of secret (about 178 bits from crypto/rand) and 6 base62
// characters holding the CRC32 (IEEE) of the secret. The prefix lets secret
// scanners find leaked keys, and the checksum lets them (and us) reject typos
// and look-alike strings offline, without a database round trip.
//
// Only the SHA-256 of a key is ever stored; the plaintext is shown to the
// user once, at creation.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"log/slog"
)

// Prefix starts every key.
const Prefix = "ftk_"

const (
	// alphabet is base62 in ASCII order; its order fixes the checksum
	// encoding, so it must never change once keys are issued.
	alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

	secretLen   = 30 // 30 * log2(62) ≈ 178.6 bits
	checksumLen = 6  // 62^6 ≈ 5.7e10 > 2^32, so any CRC32 fits
	keyLen      = len(Prefix) + secretLen + checksumLen

	// displayLen secret characters are shown in lists: enough to tell keys
	// apart, few enough (≈36 bits) to leave well over 128 bits secret.
	displayLen = 6

	// maxUnbiased is the largest multiple of 62 that fits in a byte; random
	// bytes at or above it are rejected so b%62 stays uniform.
	maxUnbiased = 256 - 256%len(alphabet) // 248
)

// Key is a freshly generated key. Plaintext is shown once and never stored.
type Key struct {
	Plaintext     string // the whole key, e.g. ftk_…; give it to the user, then forget it
	Hash          string // Hash(Plaintext); the only form that is stored
	DisplayPrefix string // Prefix + first 6 secret characters; safe to show in lists
}

// String hides the plaintext so that printing a Key by mistake (%v, %s)
// does not leak it into logs.
func (k Key) String() string { return k.DisplayPrefix + "…" }

// GoString hides the plaintext from %#v as well.
func (k Key) GoString() string {
	return fmt.Sprintf("apikey.Key{DisplayPrefix:%q, Hash:%q}", k.DisplayPrefix, k.Hash)
}

// LogValue keeps the plaintext out of structured logs, including the JSON
// handler, which would otherwise marshal every exported field.
func (k Key) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("display_prefix", k.DisplayPrefix),
		slog.String("hash", k.Hash),
	)
}

// Generate returns a new random key.
func Generate() (Key, error) {
	secret := make([]byte, 0, secretLen)
	// Rejection sampling wastes 8/256 of the bytes on average, so one read
	// of a little more than needed nearly always suffices.
	buf := make([]byte, secretLen+secretLen/4)
	for len(secret) < secretLen {
		if _, err := rand.Read(buf); err != nil {
			return Key{}, fmt.Errorf("read random bytes: %w", err)
		}
		for _, b := range buf {
			if int(b) >= maxUnbiased {
				continue
			}
			secret = append(secret, alphabet[int(b)%len(alphabet)])
			if len(secret) == secretLen {
				break
			}
		}
	}

	plaintext := make([]byte, 0, keyLen)
	plaintext = append(plaintext, Prefix...)
	plaintext = append(plaintext, secret...)
	plaintext = appendChecksum(plaintext, secret)

	s := string(plaintext)
	return Key{
		Plaintext:     s,
		Hash:          Hash(s),
		DisplayPrefix: s[:len(Prefix)+displayLen],
	}, nil
}

// WellFormed checks prefix, length, alphabet and checksum without any storage.
// It is cheap enough to run before every lookup, so garbage never reaches
// the database.
func WellFormed(s string) bool {
	if len(s) != keyLen || s[:len(Prefix)] != Prefix {
		return false
	}
	for i := len(Prefix); i < keyLen; i++ {
		if !isBase62(s[i]) {
			return false
		}
	}
	secret := s[len(Prefix) : len(Prefix)+secretLen]
	var want [checksumLen]byte
	appendChecksum(want[:0], []byte(secret))
	return string(want[:]) == s[len(Prefix)+secretLen:]
}

// Hash returns the lowercase hex SHA-256 of the whole key; only this is stored.
// A plain hash (no salt, no KDF) is enough because the key carries ~178 bits
// of entropy, and it keeps lookup by hash a single indexed equality.
func Hash(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(sum[:])
}

// Equal compares two hashes in constant time (crypto/subtle).
// It reports false if either is empty, so a missing stored hash can never
// match anything.
func Equal(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// appendChecksum appends the CRC32 of secret as checksumLen base62 digits,
// most significant first and zero-padded, so the width never varies.
func appendChecksum(dst, secret []byte) []byte {
	n := uint64(crc32.ChecksumIEEE(secret))
	var digits [checksumLen]byte
	for i := checksumLen - 1; i >= 0; i-- {
		digits[i] = alphabet[n%uint64(len(alphabet))]
		n /= uint64(len(alphabet))
	}
	return append(dst, digits[:]...)
}

func isBase62(c byte) bool {
	return ('0' <= c && c <= '9') || ('A' <= c && c <= 'Z') || ('a' <= c && c <= 'z')
}
