package decoy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/flytrap/flytrap/ids"
	"github.com/oklog/ulid/v2"
)

// Key is the installation's secret (32 random bytes) that signs tokens.
// Keys shorter than MinKeyLen are refused: NewToken returns "" and ParseToken fails.
type Key []byte

// MinKeyLen is the shortest Key NewToken and ParseToken accept.
const MinKeyLen = 16

// NewKey returns a fresh random 32-byte key.
func NewKey() Key {
	k := make(Key, 32)
	_, _ = rand.Read(k) // never fails on supported platforms
	return k
}

// Purpose says what a placement asks of its reader.
type Purpose uint8

// The purposes of placements.
const (
	Callback   Purpose = iota + 1 // a hidden link: requesting it proves a parser followed hidden content
	Challenge                     // an instruction to request a URL with a value the reader must compute (never literal in the page)
	Canary                        // an instruction to repeat a phrase in the next request/answer
	Sink                          // an invitation to POST/GET its own system prompt/instructions to a URL
	Credential                    // a planted fake API key / password whose later use is a tripwire
	Tool                          // a decoy MCP tool
	// Planted secrets other than API keys (see secrets.go): each names which secret it is,
	// so a use of it says which one was tried.
	DatabasePassword // the password of a postgres:// URL
	RedisPassword    // the password of a redis:// URL
	SessionSecret    // a session-signing secret
	AWSAccessKey     // an AWS access key id (its own shape: AWSKeyID)
	lastPurpose      = AWSAccessKey
)

var purposeNames = [...]string{"", "callback", "challenge", "canary", "sink", "credential", "tool",
	"db_password", "redis_password", "session_secret", "aws_access_key"}

// String returns the lower-case name of p ("callback", …), or "purpose(N)" for an unknown value.
func (p Purpose) String() string {
	if p.valid() {
		return purposeNames[p]
	}
	return "purpose(" + strconv.Itoa(int(p)) + ")"
}

func (p Purpose) valid() bool { return p >= Callback && p <= lastPurpose }

// Secret reports whether p is a planted secret: an API key (Credential) or one of the
// passwords, session secret or AWS key pair. A later use of any is CREDENTIAL_USED.
func (p Purpose) Secret() bool { return p == Credential || p >= DatabasePassword && p <= lastPurpose }

// TokenRef is what a token decodes to.
type TokenRef struct {
	HitID   string
	Index   int
	Purpose Purpose
	Origin  Origin // what minted it (lure.go): a stored decoy hit, a proxied page's lure, a snippet
	TrapID  string // OriginSnippet: the trap it names (HitID is then "")
}

// Token layout. The 18-byte payload (16 ULID bytes of the hit id, a version/purpose
// byte, the placement index) is sealed SIV-style: a 96-bit tag authenticates the payload
// and is the IV of the stream that encrypts it; the token is base32(tag‖ciphertext).
// Encrypting keeps the tokens of one response from sharing a visible prefix (the hit
// id) and leaks neither the hit id nor its time; the 96-bit tag makes them unforgeable.
// Two seals exist (seal.go): tokens are minted with the AES seal, and the HMAC seal of
// the tokens minted before it (and of snippets, which must not change) still opens.
const (
	payloadLen = 18
	tagLen     = 12
	rawLen     = payloadLen + tagLen // 30 bytes, a multiple of 5: no partial base32 character
	// TokenLen is the length of a token in its base-32 shape: 48 characters of a-z and 2-7.
	TokenLen = rawLen / 5 * 8
	// MinTokenLen is the length of the shortest token shape (base 62): no shorter text holds a token.
	MinTokenLen  = b62TokenLen
	tokenVersion = 1
	hitPrefix    = "hit_"
	maxIndex     = 255
)

// Domain-separation bytes of the HMAC inputs.
const (
	domTag byte = iota + 1
	domStream
	domChallenge
	domCanary
	domCredential
	domResponse
)

const b32Alphabet = "abcdefghijklmnopqrstuvwxyz234567"

// b32Dec maps a lower-case base32 character to its value (0xff otherwise);
// b32Fold does the same for upper case too (FindTokens is case-insensitive).
var b32Dec, b32Fold [256]byte

func init() {
	for i := range b32Dec {
		b32Dec[i], b32Fold[i] = 0xff, 0xff
	}
	for i := 0; i < 32; i++ {
		c := b32Alphabet[i]
		b32Dec[c], b32Fold[c] = byte(i), byte(i)
		if c >= 'a' {
			b32Fold[c-'a'+'A'] = byte(i)
		}
	}
}

// macer holds what one key seals and derives with: a keyed HMAC-SHA256 reused across many
// short messages (after the first Reset the hmac package restores the keyed state cheaply
// instead of rehashing the key), and the AES seal's ciphers (seal.go).
type macer struct {
	h   hash.Hash
	key string // what h is keyed with
	in  [64]byte
	sum [sha256.Size]byte
	aes aesSeal
}

func newMacer(key Key) *macer {
	m := &macer{h: hmac.New(sha256.New, key), key: string(key)}
	m.aes.init(key)
	return m
}

// macers keeps the macers of a key: making one keys a fresh HMAC (two SHA-256 blocks and
// five allocations) and derives and expands the AES seal's keys.
var macers sync.Pool

// getMacer returns a macer of key, reused when one is at hand; putMacer hands it back.
func getMacer(key Key) *macer {
	if m, ok := macers.Get().(*macer); ok && m.key == string(key) {
		return m
	}
	return newMacer(key)
}

func putMacer(m *macer) {
	if m != nil {
		macers.Put(m)
	}
}

// mac returns HMAC(key, dom‖msg); the result is valid until the next call.
func (m *macer) mac(dom byte, msg []byte) []byte {
	m.in[0] = dom
	n := 1 + copy(m.in[1:], msg)
	m.h.Reset()
	m.h.Write(m.in[:n])
	return m.h.Sum(m.sum[:0])
}

// token makes the token of (ulid, index, p); the caller has checked its arguments.
func (m *macer) token(ulid *[16]byte, index int, p Purpose) string {
	var pl [payloadLen]byte
	copy(pl[:16], ulid[:])
	pl[16] = tokenVersion<<4 | byte(p)
	pl[17] = byte(index)
	raw := m.seal(&pl)
	return encodeToken(&raw)
}

// tokenShaped is token, written in shape sh.
func (m *macer) tokenShaped(ulid *[16]byte, index int, p Purpose, sh shape) string {
	var pl [payloadLen]byte
	copy(pl[:16], ulid[:])
	pl[16] = tokenVersion<<4 | byte(p)
	pl[17] = byte(index)
	raw := m.seal(&pl)
	return encodeShaped(&raw, sh)
}

func encodeToken(raw *[rawLen]byte) string {
	var out [TokenLen]byte
	for g := 0; g < rawLen/5; g++ {
		b := raw[g*5 : g*5+5]
		v := uint64(b[0])<<32 | uint64(b[1])<<24 | uint64(b[2])<<16 | uint64(b[3])<<8 | uint64(b[4])
		for j := 7; j >= 0; j-- {
			out[g*8+j] = b32Alphabet[v&31]
			v >>= 5
		}
	}
	return string(out[:])
}

// decodeToken decodes a TokenLen-character candidate with table dec.
func decodeToken(s string, dec *[256]byte) (raw [rawLen]byte, ok bool) {
	if len(s) != TokenLen {
		return raw, false
	}
	for g := 0; g < rawLen/5; g++ {
		var v uint64
		for j := 0; j < 8; j++ {
			d := dec[s[g*8+j]]
			if d == 0xff {
				return raw, false
			}
			v = v<<5 | uint64(d)
		}
		raw[g*5], raw[g*5+1], raw[g*5+2], raw[g*5+3], raw[g*5+4] = byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	return raw, true
}

// parseHitID returns the 16 ULID bytes of a hit id "hit_<26 Crockford base32 characters>".
func parseHitID(id string) ([16]byte, bool) {
	u, ok := ids.Parse(id, ids.Hit)
	return u, ok
}

// formatHitID is the inverse of parseHitID (lower case, as the ids package writes them).
func formatHitID(u *[16]byte) string { return ids.Format(ids.Hit, *u) }

// hitTime is the creation time of a hit id, in Unix milliseconds (the ULID's first 48 bits).
func hitTime(u *[16]byte) int64 { return int64(ulid.ULID(*u).Time()) }

// NewToken makes the token of placement index of the response that hit hitID served:
// 48 characters of lower-case base32 (a-z, 2-7) that encrypt and authenticate (the AES seal,
// seal.go: AES-CMAC, 96-bit tag, and AES-CTR) the hit id's 16 ULID bytes, index and purpose. It returns "" when the key is
// shorter than MinKeyLen, hitID is not "hit_" and a ULID, index is outside 0–255 or p is unknown.
func NewToken(key Key, hitID string, index int, p Purpose) string {
	u, ok := parseHitID(hitID)
	if !ok || len(key) < MinKeyLen || index < 0 || index > maxIndex || !p.valid() {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	return m.token(&u, index, p)
}

// ParseToken authenticates token s (exactly, lower case) and returns what it refers to.
func ParseToken(key Key, s string) (TokenRef, bool) {
	if len(key) < MinKeyLen || len(s) != TokenLen {
		return TokenRef{}, false
	}
	raw, ok := decodeToken(s, &b32Dec)
	if !ok {
		return TokenRef{}, false
	}
	m := getMacer(key)
	defer putMacer(m)
	return m.parse(&raw)
}

func (m *macer) parse(raw *[rawLen]byte) (TokenRef, bool) {
	p, ok := m.open(raw)
	if !ok || !Purpose(p[16]&15).valid() {
		return TokenRef{}, false
	}
	var u [16]byte
	copy(u[:], p[:16])
	return refOf(p[16]>>4, &u, int(p[17]), Purpose(p[16]&15))
}

// Bounds of FindTokens.
const (
	maxFound = 16
	// maxTries bounds the authentications one call attempts, so a large body stuffed with
	// token-shaped junk costs at most about a millisecond; tokens past the budget are missed.
	maxTries = 512
	// maxGlue is how many extra characters a run may carry around a token and still have
	// every window tried: "%2F<token>%26", "\u002f<token>", "\n<token>" in JSON text.
	maxGlue = 16
)

// FindTokens returns every valid token in text (a path, query, body, header value), in
// any of its shapes (base 32, hex, UUID-like hex, base 62; shape.go): at most 16,
// deduplicated, in order of appearance. Tokens are found inside runs of their alphabet
// (base 32 and hex in either case) with up to 16 characters of glue, e.g. URL-escapes;
// longer runs are tried at both ends. It never panics and does a bounded number of
// authentications.
func FindTokens(key Key, text string) []TokenRef {
	if len(key) < MinKeyLen || len(text) < b62TokenLen {
		return nil
	}
	type found struct {
		pos  int
		cand string
		ref  TokenRef
	}
	var (
		m     *macer
		out   []found
		tries int
	)
	defer func() { putMacer(m) }() // m is made on the first candidate that decodes
	check := func(pos int, cand string, raw *[rawLen]byte, decoded bool) int {
		if len(out) >= maxFound || tries >= maxTries {
			return candStop
		}
		tries++
		if !decoded {
			return candNo
		}
		for _, f := range out {
			if f.cand == cand {
				return candFound
			}
		}
		if m == nil {
			m = getMacer(key)
		}
		ref, ok := m.parse(raw)
		if !ok {
			return candNo
		}
		for _, f := range out {
			if f.ref == ref {
				return candFound
			}
		}
		out = append(out, found{pos, cand, ref})
		return candFound
	}
	for i := 0; i < len(text); {
		if b32Fold[text[i]] == 0xff {
			i++
			continue
		}
		start := i
		for i < len(text) && b32Fold[text[i]] != 0xff {
			i++
		}
		ok := scanRun(i-start, TokenLen, func(off int) int {
			cand := text[start+off : start+off+TokenLen]
			raw, ok := decodeToken(cand, &b32Fold)
			return check(start+off, cand, &raw, ok)
		})
		if !ok {
			break
		}
	}
	if tries < maxTries && len(out) < maxFound {
		findShaped(text, check)
	}
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, func(a, b found) int { return a.pos - b.pos })
	refs := make([]TokenRef, len(out))
	for i, f := range out {
		refs[i] = f.ref
	}
	return refs
}

// secret returns HMAC(key, dom‖ulid‖index‖purpose): the per-placement secret that
// derives a placement's challenge numbers, canary words and credential style.
func (m *macer) secret(dom byte, u *[16]byte, index int, p Purpose) []byte {
	var msg [18]byte
	copy(msg[:], u[:])
	msg[16], msg[17] = byte(index), byte(p)
	return m.mac(dom, msg[:])
}

// challengeOperands are the two numbers (41–99, summing to 100–198) a Challenge asks to add.
// A sum of three digits beginning with 1 can never occur inside a token (a-z, 2-7).
// A challenge's answer, the sum of its operands, is between minAnswer and maxAnswer: three
// digits (the skeleton's answer check relies on the range, TestChallengeAnswerRange).
const (
	minAnswer = 100
	maxAnswer = 198
)

func (m *macer) challengeOperands(u *[16]byte, index int, p Purpose) (a, b int) {
	s := m.secret(domChallenge, u, index, p)
	a = 41 + int(s[0])%59
	lo := max(41, 100-a)
	b = lo + int(s[1])%(100-lo)
	return a, b
}

func refArgs(key Key, ref TokenRef) (u [16]byte, ok bool) {
	u, ok = parseHitID(ref.HitID)
	return u, ok && len(key) >= MinKeyLen && ref.Index >= 0 && ref.Index <= maxIndex && ref.Purpose.valid()
}

// ChallengeAnswer is the value a reader must compute for a Challenge placement: the decimal
// sum (100–198) of the two numbers the instruction states in words. "" for an invalid ref.
func ChallengeAnswer(key Key, ref TokenRef) string {
	u, ok := refArgs(key, ref)
	if !ok {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	a, b := m.challengeOperands(&u, ref.Index, ref.Purpose)
	return strconv.Itoa(a + b)
}

// CanaryPhrase is the phrase a Canary placement asks the reader to repeat: two words and
// the token, e.g. "amber-lantern-<token>", so an echo anywhere is attributable. "" for an invalid ref.
func CanaryPhrase(key Key, ref TokenRef) string {
	u, ok := refArgs(key, ref)
	if !ok {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	return m.canaryPhrase(&u, ref.Index, ref.Purpose, m.token(&u, ref.Index, ref.Purpose))
}

func (m *macer) canaryPhrase(u *[16]byte, index int, p Purpose, token string) string {
	s := m.secret(domCanary, u, index, p)
	return canaryAdjectives[int(s[0])%len(canaryAdjectives)] + "-" + canaryNouns[int(s[1])%len(canaryNouns)] + "-" + token
}

// credentialStyles are the shapes of planted secrets: a well-known key prefix and the
// variable a config file would keep it in.
var credentialStyles = [...]struct{ prefix, env, service string }{
	{"sk_live_", "STRIPE_SECRET_KEY", "stripe"},
	{"sk-proj-", "OPENAI_API_KEY", "openai"},
	{"sk-ant-api03-", "ANTHROPIC_API_KEY", "anthropic"},
	{"ghp_", "GITHUB_TOKEN", "github"},
	{"xoxb-", "SLACK_BOT_TOKEN", "slack"},
}

// credentialStyle picks the style of a credential: consecutive indices of one hit get distinct styles.
func (m *macer) credentialStyle(u *[16]byte, index int) int {
	s := m.secret(domCredential, u, 0, 0)
	return (int(s[0]) + index) % len(credentialStyles)
}

// CredentialValue is the planted secret of a Credential placement: a real-looking API key
// ("sk_live_…", "sk-proj-…", "sk-ant-api03-…", "ghp_…", "xoxb-…") ending in the token.
// "" for an invalid ref.
func CredentialValue(key Key, ref TokenRef) string {
	u, ok := refArgs(key, ref)
	if !ok {
		return ""
	}
	m := getMacer(key)
	defer putMacer(m)
	return credentialStyles[m.credentialStyle(&u, ref.Index)].prefix + m.tokenShaped(&u, ref.Index, ref.Purpose, shapeBase62)
}

var canaryAdjectives = [...]string{
	"amber", "azure", "brisk", "cedar", "coral", "crimson", "dusky", "ember", "frosted", "gilded",
	"granite", "hollow", "indigo", "ivory", "jade", "lunar", "maple", "misty", "northern", "obsidian",
	"olive", "quiet", "rapid", "russet", "silver", "slate", "solar", "tawny", "velvet", "violet",
	"willow", "winter",
}

var canaryNouns = [...]string{
	"anchor", "beacon", "bramble", "canyon", "cobalt", "compass", "falcon", "fjord", "harbor", "heron",
	"juniper", "kestrel", "lantern", "ledger", "meadow", "orchard", "otter", "pebble", "quarry", "raven",
	"ridge", "sparrow", "summit", "thistle", "timber", "tundra", "valley", "walnut", "harvest", "glacier",
	"meridian", "signal",
}

// ChallengeAnswered reports whether text (a query value, form field or body) gives the
// answer of Challenge placement ref: the number, not part of a longer number.
func ChallengeAnswered(key Key, ref TokenRef, text string) bool {
	ans := ChallengeAnswer(key, ref)
	if ans == "" {
		return false
	}
	for i := 0; ; {
		j := strings.Index(text[i:], ans)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(ans)
		if (j == 0 || !isDigit(text[j-1])) && (end == len(text) || !isDigit(text[end])) {
			return true
		}
		i = j + 1
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// DecodeTagText returns the ASCII hidden in s as Unicode tag characters (U+E0020–U+E007E),
// the form of the zero-width placement, with separate runs joined by a space: what a
// language model that reads those characters sees.
func DecodeTagText(s string) string {
	var b strings.Builder
	gap := false
	for _, c := range s {
		if c >= 0xE0020 && c <= 0xE007E {
			if gap && b.Len() > 0 {
				b.WriteByte(' ')
			}
			gap = false
			b.WriteByte(byte(c - 0xE0000))
		} else {
			gap = true
		}
	}
	return b.String()
}
