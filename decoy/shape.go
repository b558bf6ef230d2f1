package decoy

import (
	"encoding/hex"
	"math/bits"
	"regexp"
)

// shape is how a token is written: the same 30 sealed bytes (tokens are 240 bits, see
// token.go) in another alphabet, so the tokens of one decoy don't share one recognisable
// form. FindTokens recognises every shape wherever it comes back.
type shape uint8

const (
	shapeBase32 shape = iota // 48 characters of a-z and 2-7 (NewToken's)
	shapeHex                 // 60 lower-case hex digits
	shapeBase62              // 41 characters of 0-9, A-Z, a-z
	shapeUUID                // the 60 hex digits grouped like a UUID and a tail: 8-4-4-4-12-28 (65 characters)
	numShapes
)

const (
	hexTokenLen  = 2 * rawLen // 60
	b62TokenLen  = 41         // 62^41 > 2^240
	uuidTokenLen = hexTokenLen + 5
)

const b62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var b62Dec [256]byte

func init() {
	for i := range b62Dec {
		b62Dec[i] = 0xff
	}
	for i := 0; i < len(b62Alphabet); i++ {
		b62Dec[b62Alphabet[i]] = byte(i)
	}
}

// TokenURL matches a path that ends in a token of any shape: what a proxy in front of an
// application routes to the trap listener (docs/deployment.md) and what tests look for
// in a decoy. It matches shapes, not tokens: FindTokens says which are real.
var TokenURL = regexp.MustCompile(`(?:/[A-Za-z0-9._~-]+)*/(?:[a-z2-7]{48}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-f]{28}|[0-9a-f]{60}|[0-9A-Za-z]{41})\b`)

// encodeShaped writes raw in shape s.
func encodeShaped(raw *[rawLen]byte, s shape) string {
	switch s {
	case shapeHex:
		var h [2 * rawLen]byte
		hex.Encode(h[:], raw[:])
		return string(h[:])
	case shapeBase62:
		return encodeB62(raw)
	case shapeUUID:
		// The hex digits cut 8-4-4-4-12-rest, in one allocation (the string's).
		var h [2 * rawLen]byte
		hex.Encode(h[:], raw[:])
		var u [2*rawLen + 5]byte
		n := 0
		for i, cut := range [...]int{8, 12, 16, 20, 32, 2 * rawLen} {
			if i > 0 {
				u[n] = '-'
				n++
			}
			n += copy(u[n:], h[[...]int{0, 8, 12, 16, 20, 32}[i]:cut])
		}
		return string(u[:n])
	}
	return encodeToken(raw)
}

// encodeB62 writes raw as a 41-digit base-62 number, big-endian, zero-padded. A 240-bit
// value's leading digit is 0–3, a mark of its own, so the leading digit is written
// shifted by the sum of the others (mod 62): every character position looks alike.
// b62Pow10 is 62^10.
const b62Pow10 = 62 * 62 * 62 * 62 * 62 * 62 * 62 * 62 * 62 * 62

func encodeB62(raw *[rawLen]byte) string {
	var v [4]uint64 // little-endian 64-bit limbs
	for i := range rawLen {
		v[i/8] |= uint64(raw[rawLen-1-i]) << (8 * (i % 8))
	}
	var d [b62TokenLen]int
	// Ten digits per pass over the limbs (62^10 < 2^64): a fifth of the 128-bit divisions
	// of one digit per pass, the digits then split off a word.
	i := b62TokenLen - 1
	for ; i >= 9; i -= 10 {
		var rem uint64
		for k := 3; k >= 0; k-- {
			v[k], rem = bits.Div64(rem, v[k], b62Pow10)
		}
		for j := range 10 {
			d[i-j] = int(rem % 62)
			rem /= 62
		}
	}
	for ; i >= 0; i-- {
		var rem uint64
		for k := 3; k >= 0; k-- {
			v[k], rem = bits.Div64(rem, v[k], 62)
		}
		d[i] = int(rem)
	}
	sum := 0
	for _, x := range d[1:] {
		sum += x
	}
	d[0] = (d[0] + sum) % 62
	var out [b62TokenLen]byte
	for i, x := range d {
		out[i] = b62Alphabet[x]
	}
	return string(out[:])
}

// decodeB62 is the inverse of encodeB62; it fails on another character or a value over 240 bits.
func decodeB62(s string) (raw [rawLen]byte, ok bool) {
	if len(s) != b62TokenLen {
		return raw, false
	}
	sum := 0
	for i := 1; i < len(s); i++ {
		x := b62Dec[s[i]]
		if x == 0xff {
			return raw, false
		}
		sum += int(x)
	}
	first := b62Dec[s[0]]
	if first == 0xff {
		return raw, false
	}
	lead := ((int(first)-sum)%62 + 62) % 62
	if lead > 3 { // 4·62^40 > 2^240: no token (most random windows stop here)
		return raw, false
	}
	var v [4]uint64
	for i := 0; i < len(s); i++ {
		carry := uint64(lead)
		if i > 0 {
			carry = uint64(b62Dec[s[i]])
		}
		for k := range v {
			hi, lo := bits.Mul64(v[k], 62)
			var c uint64
			v[k], c = bits.Add64(lo, carry, 0)
			carry = hi + c
		}
		if carry != 0 {
			return raw, false
		}
	}
	if v[3]>>48 != 0 {
		return raw, false
	}
	for i := range rawLen {
		raw[rawLen-1-i] = byte(v[i/8] >> (8 * (i % 8)))
	}
	return raw, true
}

// decodeHex decodes 60 hex digits (either case).
func decodeHex(s string) (raw [rawLen]byte, ok bool) {
	if len(s) != hexTokenLen {
		return raw, false
	}
	_, err := hex.Decode(raw[:], []byte(s))
	return raw, err == nil
}

var hexDigit = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

func isHexDigit(c byte) bool { return hexDigit[c] }

func isAlnum(c byte) bool { return b62Dec[c] != 0xff }

// What a candidate's check says.
const (
	candNo    = iota // not a token: try the run's next window
	candFound        // a token: the run is done
	candStop         // the search is over (enough found, or out of budget)
)

// findShaped looks for the hex, UUID-like and base-62 tokens of text, calling try with
// each candidate's position and raw bytes (ok false: it does not decode, which counts
// toward the budget all the same). Like the base-32 scan, a run may carry up to maxGlue
// characters of glue around a token; longer runs are tried at both ends.
func findShaped(text string, try func(pos int, cand string, raw *[rawLen]byte, ok bool) int) {
	// Hex, dashes allowed between digits (the UUID-like shape): the digits of each run of
	// [0-9a-fA-F-], dashes dropped.
	var digits []byte
	var at []int // text position of each digit
	for i := 0; i < len(text); {
		if !isHexDigit(text[i]) {
			i++
			continue
		}
		digits, at = digits[:0], at[:0]
		for i < len(text) && (isHexDigit(text[i]) || text[i] == '-' && i+1 < len(text) && isHexDigit(text[i+1]) && len(digits) > 0) {
			if text[i] != '-' {
				digits = append(digits, text[i])
				at = append(at, i)
			}
			i++
		}
		n := len(digits)
		tryAt := func(off int) int {
			raw, ok := decodeHex(string(digits[off : off+hexTokenLen]))
			return try(at[off], text[at[off]:at[off+hexTokenLen-1]+1], &raw, ok)
		}
		if !scanRun(n, hexTokenLen, tryAt) {
			return
		}
	}
	// Base 62: runs of letters and digits.
	for i := 0; i < len(text); {
		if !isAlnum(text[i]) {
			i++
			continue
		}
		start := i
		for i < len(text) && isAlnum(text[i]) {
			i++
		}
		n := i - start
		tryAt := func(off int) int {
			cand := text[start+off : start+off+b62TokenLen]
			raw, ok := decodeB62(cand)
			return try(start+off, cand, &raw, ok)
		}
		if !scanRun(n, b62TokenLen, tryAt) {
			return
		}
	}
}

// scanRun tries the windows of size of a run of n characters: every offset when the run
// is at most maxGlue longer, else both ends. It reports false when the search is over.
func scanRun(n, size int, tryAt func(off int) int) bool {
	switch {
	case n < size:
	case n <= size+maxGlue:
		for off := 0; off+size <= n; off++ {
			switch tryAt(off) {
			case candFound:
				return true
			case candStop:
				return false
			}
		}
	default:
		if tryAt(0) == candStop || tryAt(n-size) == candStop {
			return false
		}
	}
	return true
}
