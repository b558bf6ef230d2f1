package decoy

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Planted secrets other than API keys. A database or Redis password and a session secret
// are a placement's token itself, so FindTokens recognises them wherever a client puts
// them (a connection string, Basic auth, a cookie, a query, a body). An AWS access key id
// cannot hold a token (AKIA and 16 base32 characters, 80 bits), so it carries a sealed
// pointer instead: the hit's millisecond, the placement index and a 24-bit tag, encrypted
// with a keyed 80-bit Feistel permutation (AWSKeyID). The engine finds ids in a request
// (FindAWSKeyIDs), decrypts them (ParseAWSKeyID), looks up the hits of that millisecond
// and keeps the one whose tag matches (AWSKeyRef.Match). The secret access key is derived
// from the same pointer: a SigV4 client never sends it (it signs), but a person or a
// script may paste it anywhere (?aws_secret_access_key=…, a form, a JSON body, a header).
// It is 40 characters of base64 (30 bytes): the pointer encrypted under a Feistel
// permutation of its own (10 bytes) and a 160-bit HMAC of the hit and index (20 bytes),
// so FindAWSSecrets and ParseAWSSecret find and decrypt it like the id, and Match checks
// its whole MAC once the hit is known.

// Domain-separation bytes of the AWS key id's HMAC inputs (apart from token.go's).
const (
	domAWSRound  byte = 0x81
	domAWSTag    byte = 0x82
	domAWSSecret byte = 0x83
	// The secret access key's own Feistel rounds: its pointer looks nothing like the id's.
	domAWSSecretRound byte = 0x84
)

// awsSecretLen is a secret access key's length: 40 characters of base64, 30 bytes.
const awsSecretLen = 40

const (
	awsPrefix   = "AKIA"
	awsIDLen    = len(awsPrefix) + 16
	awsAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	awsRounds   = 4
	// MaxAWSKeyAge bounds how old a hit an AWS key id may point to: a decrypted id naming
	// a time outside [now-MaxAWSKeyAge, now] is noise, not worth a lookup.
	MaxAWSKeyAge = 400 * 24 * 3600 * 1000 // milliseconds
)

// secretToken mints a placement of purpose p (a password or a session secret) and
// returns the secret: the placement's token, whatever shape the codec gives it.
func (r *renderer) secretToken(where string, p Purpose) string {
	return r.place(where, p, "").Token
}

// awsKeyPair mints an AWSAccessKey placement and returns its key id (the placement's
// token) and secret access key.
func (r *renderer) awsKeyPair(where string) (id, secret string) {
	pl := r.place(where, AWSAccessKey, "")
	if !r.ok {
		return awsPrefix + r.randUpper(16), r.randText(r.rnd, 40)
	}
	id = r.m.awsKeyID(&r.ulid, pl.Index)
	r.places[len(r.places)-1].Token = id
	return id, r.m.awsSecret(&r.ulid, pl.Index)
}

// AWSKeyID is the planted AWS access key id of AWSAccessKey placement index of the response
// hit hitID served, "" for a bad key, hit id or index.
func AWSKeyID(key Key, hitID string, index int) string {
	u, ok := refArgs(key, TokenRef{HitID: hitID, Index: index, Purpose: AWSAccessKey})
	if !ok {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	return m.awsKeyID(&u, index)
}

// AWSSecretKey is the secret access key paired with AWSKeyID(key, hitID, index).
func AWSSecretKey(key Key, hitID string, index int) string {
	u, ok := refArgs(key, TokenRef{HitID: hitID, Index: index, Purpose: AWSAccessKey})
	if !ok {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	return m.awsSecret(&u, index)
}

func (m *macer) awsTag(u *[16]byte, index int) []byte {
	var msg [17]byte
	copy(msg[:], u[:])
	msg[16] = byte(index)
	return m.mac(domAWSTag, msg[:])[:3]
}

// awsPointer is the 80-bit block both halves of a key pair carry, before encryption: the
// ULID's 48-bit millisecond time, the placement index and the 24-bit tag.
func (m *macer) awsPointer(u *[16]byte, index int) (blk [10]byte) {
	copy(blk[:6], u[:6])
	blk[6] = byte(index)
	copy(blk[7:], m.awsTag(u, index))
	return blk
}

func (m *macer) awsKeyID(u *[16]byte, index int) string {
	blk := m.awsPointer(u, index)
	m.feistel(&blk, false)
	var out [awsIDLen]byte
	copy(out[:], awsPrefix)
	for g := 0; g < 2; g++ {
		b := blk[g*5 : g*5+5]
		v := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
		for j := 7; j >= 0; j-- {
			out[len(awsPrefix)+g*8+j] = awsAlphabet[v&31]
			v >>= 5
		}
	}
	return string(out[:])
}

func (m *macer) awsSecret(u *[16]byte, index int) string {
	var raw [30]byte
	blk := m.awsPointer(u, index)
	m.feistelIn(domAWSSecretRound, &blk, false)
	copy(raw[:10], blk[:])
	copy(raw[10:], m.awsSecretMAC(u, index))
	return base64.StdEncoding.EncodeToString(raw[:])
}

// awsSecretMAC is the 20-byte MAC a secret access key ends in.
func (m *macer) awsSecretMAC(u *[16]byte, index int) []byte {
	var msg [17]byte
	copy(msg[:], u[:])
	msg[16] = byte(index)
	return m.mac(domAWSSecret, msg[:])[:20]
}

// feistel runs the keyed 80-bit permutation on blk (two 40-bit halves), or its inverse.
func (m *macer) feistel(blk *[10]byte, inverse bool) { m.feistelIn(domAWSRound, blk, inverse) }

// feistelIn is feistel with the rounds' HMAC domain dom.
func (m *macer) feistelIn(dom byte, blk *[10]byte, inverse bool) {
	var l, r [5]byte
	copy(l[:], blk[:5])
	copy(r[:], blk[5:])
	round := func(i int, x [5]byte) [5]byte {
		var in [6]byte
		in[0] = byte(i)
		copy(in[1:], x[:])
		var f [5]byte
		copy(f[:], m.mac(dom, in[:]))
		return f
	}
	if !inverse {
		for i := range awsRounds {
			f := round(i, r)
			for j := range l {
				l[j] ^= f[j]
			}
			l, r = r, l
		}
	} else {
		for i := awsRounds - 1; i >= 0; i-- {
			l, r = r, l
			f := round(i, r)
			for j := range l {
				l[j] ^= f[j]
			}
		}
	}
	copy(blk[:5], l[:])
	copy(blk[5:], r[:])
}

// AWSKeyRef is what an AWS key id decrypts to: the millisecond of the hit that served it,
// the placement index and a tag that tells that hit from others of the same millisecond.
type AWSKeyRef struct {
	Millis int64
	Index  int
	tag    [3]byte
	// Secret says the reference came from a secret access key (ParseAWSSecret), whose
	// whole MAC Match checks too.
	Secret    bool
	secretMAC [20]byte
}

// ParseAWSKeyID decrypts an AWS access key id ("AKIA" and 16 characters A-Z, 2-7).
// Any such id decrypts; only Match against a stored hit tells a planted one.
func ParseAWSKeyID(key Key, id string) (AWSKeyRef, bool) {
	if len(key) < MinKeyLen || len(id) != awsIDLen || !strings.HasPrefix(id, awsPrefix) {
		return AWSKeyRef{}, false
	}
	var blk [10]byte
	for g := 0; g < 2; g++ {
		var v uint64
		for j := 0; j < 8; j++ {
			d := strings.IndexByte(awsAlphabet, id[len(awsPrefix)+g*8+j])
			if d < 0 {
				return AWSKeyRef{}, false
			}
			v = v<<5 | uint64(d)
		}
		for j := 4; j >= 0; j-- {
			blk[g*5+j] = byte(v)
			v >>= 8
		}
	}
	m := getMacer(key)
	m.feistel(&blk, true)
	putMacer(m)
	return awsRef(&blk), true
}

// awsRef reads a decrypted pointer block.
func awsRef(blk *[10]byte) AWSKeyRef {
	var t [8]byte
	copy(t[2:], blk[:6])
	ref := AWSKeyRef{Millis: int64(binary.BigEndian.Uint64(t[:])), Index: int(blk[6])}
	copy(ref.tag[:], blk[7:])
	return ref
}

// ParseAWSSecret decrypts a secret access key (40 characters of base64; the URL-safe
// alphabet is read too). Any such text decrypts; only Match against a stored hit tells a
// planted one, checking its tag and its 160-bit MAC.
func ParseAWSSecret(key Key, secret string) (AWSKeyRef, bool) {
	if len(key) < MinKeyLen || len(secret) != awsSecretLen {
		return AWSKeyRef{}, false
	}
	secret = strings.NewReplacer("-", "+", "_", "/").Replace(secret)
	var raw [30]byte
	if n, err := base64.StdEncoding.Decode(raw[:], []byte(secret)); err != nil || n != len(raw) {
		return AWSKeyRef{}, false
	}
	var blk [10]byte
	copy(blk[:], raw[:10])
	m := getMacer(key)
	m.feistelIn(domAWSSecretRound, &blk, true)
	putMacer(m)
	ref := awsRef(&blk)
	ref.Secret = true
	copy(ref.secretMAC[:], raw[10:])
	return ref, true
}

// maxAWSSecrets bounds the candidates FindAWSSecrets returns: each costs a decryption and,
// when it names a plausible time, a lookup.
const maxAWSSecrets = 8

// FindAWSSecrets returns what may be secret access keys in text (at most 8, deduplicated,
// mixing upper and lower case): runs of exactly 40 base64 characters standing alone, or 40
// characters between slashes or the ends of a longer run (a path); also once percent-encoding (%2B, %2F) and JSON escapes (\/, \u002b) are
// decoded: ?aws_secret_access_key=…, a form, a JSON body, a header, a cookie, a multipart
// part. A '+' a form decoder would read as a space is kept as sent.
func FindAWSSecrets(text string) []string {
	var out []string
	scan := func(s string) {
		for i := 0; i < len(s) && len(out) < maxAWSSecrets; {
			if !isB64Char(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && isB64Char(s[j]) {
				j++
			}
			run := s[i:j]
			i = j
			if len(run) < awsSecretLen {
				continue
			}
			if len(run) == awsSecretLen {
				out = addSecret(out, run)
				continue
			}
			// A longer run (a path): 40 characters between slashes or the run's ends (a
			// secret may hold slashes of its own). A run without a slash (a JWT's part, a
			// hash) holds none.
			for a := 0; a+awsSecretLen <= len(run) && len(out) < maxAWSSecrets; a++ {
				if (a == 0 || run[a-1] == '/') && (a+awsSecretLen == len(run) || run[a+awsSecretLen] == '/') {
					out = addSecret(out, run[a:a+awsSecretLen])
				}
			}
		}
	}
	scan(text)
	// Decoded only when what hides '+' or '/' is there: %2B, %2F, \/, \u002b, \u002f.
	if strings.Contains(text, "%2") || strings.Contains(text, `\/`) || strings.Contains(text, `\u002`) || strings.Contains(text, `\U002`) {
		scan(unescapeSecretText(text))
	}
	return out
}

func addSecret(out []string, s string) []string {
	// A secret has 240 random bits: it mixes cases (one without both has odds below
	// 10⁻⁸). A run of one case (a hash in hex, a word) is not worth a decryption.
	var lower, upper bool
	for k := 0; k < len(s); k++ {
		c := s[k]
		lower = lower || c >= 'a' && c <= 'z'
		upper = upper || c >= 'A' && c <= 'Z'
	}
	if !lower || !upper || contains(out, s) {
		return out
	}
	return append(out, s)
}

func isB64Char(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}

// unescapeSecretText decodes what may hide a base64 character: %XX (any case), \/ and
// \u002b / \u002f. Everything else is kept.
func unescapeSecretText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]):
			b.WriteByte(hexVal(s[i+1])<<4 | hexVal(s[i+2]))
			i += 2
		case c == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case c == '\\' && i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && strings.EqualFold(s[i+2:i+6], "002b"):
			b.WriteByte('+')
			i += 5
		case c == '\\' && i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') && strings.EqualFold(s[i+2:i+6], "002f"):
			b.WriteByte('/')
			i += 5
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// Match returns the token reference of the key id when hitID (a hit of ref's millisecond)
// is the hit that served it.
func (ref AWSKeyRef) Match(key Key, hitID string) (TokenRef, bool) {
	u, ok := parseHitID(hitID)
	if !ok || len(key) < MinKeyLen || hitTime(&u) != ref.Millis {
		return TokenRef{}, false
	}
	m := getMacer(key)
	defer putMacer(m)
	tag := m.awsTag(&u, ref.Index)
	if tag[0] != ref.tag[0] || tag[1] != ref.tag[1] || tag[2] != ref.tag[2] {
		return TokenRef{}, false
	}
	if ref.Secret && !hmac.Equal(m.awsSecretMAC(&u, ref.Index), ref.secretMAC[:]) {
		return TokenRef{}, false
	}
	return TokenRef{HitID: hitID, Index: ref.Index, Purpose: AWSAccessKey}, true
}

// maxAWSIDs bounds the AWS key ids FindAWSKeyIDs returns: each may cost a lookup.
const maxAWSIDs = 4

// FindAWSKeyIDs returns the AWS access key ids in text (at most 4, deduplicated): "AKIA"
// and 16 characters A-Z, 2-7, standing alone — in a SigV4 Authorization header's
// Credential=AKIA…/date/region/service/aws4_request, an X-Amz-Credential query, a body.
func FindAWSKeyIDs(text string) []string {
	var out []string
	for i := 0; len(out) < maxAWSIDs; {
		j := strings.Index(text[i:], awsPrefix)
		if j < 0 {
			break
		}
		j += i
		i = j + 1
		if j > 0 && isIDChar(text[j-1]) || j+awsIDLen > len(text) || j+awsIDLen < len(text) && isIDChar(text[j+awsIDLen]) {
			continue
		}
		id := text[j : j+awsIDLen]
		ok := true
		for k := len(awsPrefix); k < awsIDLen && ok; k++ {
			ok = strings.IndexByte(awsAlphabet, id[k]) >= 0
		}
		if ok && !contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

func isIDChar(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z'
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// SecretName names the planted secret a reference is: "database password", "Redis
// password", "session secret", "AWS access key", or "<service> API key" for a Credential
// ("stripe API key"); "" when ref is no secret.
func SecretName(key Key, ref TokenRef) string {
	switch ref.Purpose {
	case DatabasePassword:
		return "database password"
	case RedisPassword:
		return "Redis password"
	case SessionSecret:
		return "session secret"
	case AWSAccessKey:
		return "AWS access key"
	case Credential:
		if u, ok := refArgs(key, ref); ok {
			m := getMacer(key)
			defer putMacer(m)
			return credentialStyles[m.credentialStyle(&u, ref.Index)].service + " API key"
		}
		return "API key"
	}
	return ""
}
