// Package webhook sends an organization's events to its webhook endpoints: signed per
// the Standard Webhooks scheme, in the endpoint's format, through an HTTP client that
// refuses private networks, retried with backoff by a dispatcher that leases each
// delivery so that several instances on one database send it once.
package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// SecretPrefix starts every signing secret, so secret scanners can find leaked ones.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ and the standard base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// SecretKey returns the HMAC key of a secret: the base64-decoded part after whsec_.
func SecretKey(secret string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(k) == 0 {
		return nil, errors.New("malformed webhook secret")
	}
	return k, nil
}

// Sign returns the webhook-signature header value for a message: one "v1,<base64 HMAC-SHA256>"
// of "id.timestamp.body" per secret, separated by spaces (several during a rotation).
func Sign(secrets []string, id string, timestamp int64, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := SecretKey(s)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
		mac.Write([]byte{'.'})
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
