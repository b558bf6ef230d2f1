// Package fingerprint is what a connection proves of its client, beside what the client
// says: JA4 from its TLS ClientHello (FoxIO's JA4, BSD 3-Clause: the rest of JA4+ is not
// free for commercial use and is not implemented here), its HTTP/2 fingerprint in
// Akamai's format, and Flytrap's own fingerprint of the order of its request headers;
// and the client stack family those point to (Family). Everything here reads
// attacker-controlled bytes: bounded, allocation-light, never blocking the stream.
package fingerprint

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"slices"
)

// isGREASE reports whether v is one of RFC 8701's GREASE values (0x0a0a, 0x1a1a, … 0xfafa).
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// JA4 is the JA4 fingerprint of a TLS-over-TCP ClientHello, as FoxIO's spec
// (technical_details/JA4.md) computes it: t, version, d or i, cipher and extension
// counts, ALPN's first and last characters; the sorted ciphers' hash; the sorted
// extensions' (less SNI and ALPN) and the signature algorithms' hash; GREASE ignored.
// Go's SupportedVersions holds supported_versions' list, or the versions up to the
// legacy one when the client sent none, so its highest is JA4's version either way.
func JA4(h *tls.ClientHelloInfo) string {
	var buf [36]byte
	b := buf[:0]
	b = append(b, 't')
	var ver uint16
	for _, v := range h.SupportedVersions {
		if !isGREASE(v) && v > ver {
			ver = v
		}
	}
	b = append(b, versionCode(ver)...)
	sni := byte('i')
	exts := 0
	for _, e := range h.Extensions {
		if isGREASE(e) {
			continue
		}
		exts++
		if e == 0 {
			sni = 'd'
		}
	}
	b = append(b, sni)
	ciphers := 0
	for _, c := range h.CipherSuites {
		if !isGREASE(c) {
			ciphers++
		}
	}
	b = appendCount(b, ciphers)
	b = appendCount(b, exts)
	var alpn string
	if len(h.SupportedProtos) > 0 {
		alpn = h.SupportedProtos[0]
	}
	b = appendALPN(b, alpn)
	b = append(b, '_')
	var arr [1024]byte // the lists, comma-separated, fit here but for absurd hellos
	b = appendHash(b, appendCiphers(arr[:0], h.CipherSuites))
	b = append(b, '_')
	b = appendHash(b, appendExtensions(arr[:0], h.Extensions, h.SignatureSchemes))
	return string(b)
}

func versionCode(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "13"
	case tls.VersionTLS12:
		return "12"
	case tls.VersionTLS11:
		return "11"
	case tls.VersionTLS10:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	}
	return "00"
}

func appendCount(b []byte, n int) []byte {
	n = min(n, 99)
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// appendALPN appends the first and last characters of the first ALPN value ("00" for
// none), or of its hex form when either byte is not ASCII alphanumeric.
func appendALPN(b []byte, p string) []byte {
	if p == "" {
		return append(b, '0', '0')
	}
	first, last := p[0], p[len(p)-1]
	if isAlnum(first) && isAlnum(last) {
		return append(b, first, last)
	}
	const digits = "0123456789abcdef"
	return append(b, digits[first>>4], digits[last&0xf])
}

// appendHex4 appends v as 4 lower-case hex digits.
func appendHex4(b []byte, v uint16) []byte {
	const digits = "0123456789abcdef"
	return append(b, digits[v>>12], digits[v>>8&0xf], digits[v>>4&0xf], digits[v&0xf])
}

// appendCiphers appends the ciphers less GREASE, sorted, as JA4_b's list.
func appendCiphers(b []byte, cs []uint16) []byte {
	var sorted [128]uint16
	s := sorted[:0]
	for _, c := range cs {
		if !isGREASE(c) {
			s = append(s, c)
		}
	}
	slices.Sort(s)
	for i, c := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHex4(b, c)
	}
	return b
}

// appendExtensions appends JA4_c's list: the extensions less GREASE, SNI and ALPN,
// sorted, then "_" and the signature algorithms as sent (none: no underscore).
func appendExtensions(b []byte, es []uint16, sigs []tls.SignatureScheme) []byte {
	var sorted [64]uint16
	s := sorted[:0]
	for _, e := range es {
		if !isGREASE(e) && e != 0x0000 && e != 0x0010 {
			s = append(s, e)
		}
	}
	slices.Sort(s)
	if len(s) == 0 {
		return b
	}
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHex4(b, e)
	}
	first := true
	for _, g := range sigs {
		if isGREASE(uint16(g)) {
			continue
		}
		if first {
			b = append(b, '_')
			first = false
		} else {
			b = append(b, ',')
		}
		b = appendHex4(b, uint16(g))
	}
	return b
}

// appendHash appends the first 12 hex digits of l's SHA-256, or 12 zeros for an empty list.
func appendHash(b, l []byte) []byte {
	if len(l) == 0 {
		return append(b, "000000000000"...)
	}
	sum := sha256.Sum256(l)
	var h [12]byte
	hex.Encode(h[:], sum[:6])
	return append(b, h[:]...)
}

// ValidJA4 reports whether s has JA4's shape (a header a CDN forwards is checked with it
// before it is believed: t13d1516h2_8daaf6152771_e5627efa2ab1).
func ValidJA4(s string) bool {
	if len(s) != 36 || s[10] != '_' || s[23] != '_' {
		return false
	}
	if s[0] != 't' && s[0] != 'q' && s[0] != 'd' || s[3] != 'd' && s[3] != 'i' {
		return false
	}
	for i := 1; i < 10; i++ {
		if i != 3 && !isAlnum(s[i]) {
			return false
		}
	}
	for i := 11; i < 36; i++ {
		if c := s[i]; i != 23 && !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
