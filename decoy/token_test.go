package decoy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math/big"
	mrand "math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

var testKey = Key("0123456789abcdef0123456789abcdef")

// newHitID makes an id like ids.New(ids.Hit): "hit_" and a lower-case ULID of now.
func newHitID(tb testing.TB) string {
	tb.Helper()
	var u [16]byte
	ms := time.Now().UnixMilli()
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	_, _ = rand.Read(u[6:])
	return formatHitID(&u)
}

func TestHitIDMatchesULIDEncoding(t *testing.T) {
	// Vectors from github.com/oklog/ulid/v2, which the ids package uses.
	for _, v := range []struct {
		s, hex string
		ms     int64
	}{
		{"01arz3ndektsv4rrffq69g5fav", "01563e3ab5d3d6764c61efb99302bd5b", 1469922850259},
		{"7zzzzzzzzzzzzzzzzzzzzzzzzz", "ffffffffffffffffffffffffffffffff", 281474976710655},
		{"00000000000000000000000000", "00000000000000000000000000000000", 0},
	} {
		u, ok := parseHitID("hit_" + v.s)
		if !ok || hex.EncodeToString(u[:]) != v.hex || hitTime(&u) != v.ms {
			t.Fatalf("parseHitID(%s) = %x, %v", v.s, u, ok)
		}
		if got := formatHitID(&u); got != "hit_"+v.s {
			t.Fatalf("formatHitID = %s, want hit_%s", got, v.s)
		}
		if _, ok := parseHitID("hit_" + strings.ToUpper(v.s)); !ok {
			t.Fatalf("upper-case %s refused", v.s)
		}
	}
	for _, bad := range []string{"", "hit_", "ses_01arz3ndektsv4rrffq69g5fav", "hit_81arz3ndektsv4rrffq69g5fav",
		"hit_01arz3ndektsv4rrffq69g5fa", "hit_01arz3ndektsv4rrffq69g5favv", "hit_01arz3ndektsv4rrffq69g5fau", "hit-01arz3ndektsv4rrffq69g5fav"} {
		if _, ok := parseHitID(bad); ok {
			t.Errorf("parseHitID(%q) accepted", bad)
		}
	}
}

func TestTokenRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		hit := newHitID(t)
		for _, idx := range []int{0, 1, 5, 31, 200, 255} {
			for p := Callback; p <= Tool; p++ {
				tok := NewToken(testKey, hit, idx, p)
				if len(tok) != TokenLen || strings.Trim(tok, b32Alphabet) != "" {
					t.Fatalf("token %q is not %d characters of a-z2-7", tok, TokenLen)
				}
				if seen[tok] {
					t.Fatalf("duplicate token %s", tok)
				}
				seen[tok] = true
				ref, ok := ParseToken(testKey, tok)
				if !ok || ref != (TokenRef{HitID: hit, Index: idx, Purpose: p}) {
					t.Fatalf("ParseToken(%s) = %+v, %v; want %s/%d/%v", tok, ref, ok, hit, idx, p)
				}
				if again := NewToken(testKey, hit, idx, p); again != tok {
					t.Fatal("NewToken is not deterministic")
				}
			}
		}
	}
}

func TestTokensOfOneHitShareNoPrefix(t *testing.T) {
	hit := newHitID(t)
	a, b := NewToken(testKey, hit, 0, Callback), NewToken(testKey, hit, 1, Callback)
	common := 0
	for common < len(a) && a[common] == b[common] {
		common++
	}
	if common > 4 {
		t.Fatalf("tokens of one hit share a %d-character prefix: %s %s", common, a, b)
	}
	if strings.Contains(a, hit[4:10]) {
		t.Fatal("the hit id is visible in its token")
	}
}

func TestNewTokenRefusesBadInput(t *testing.T) {
	hit := newHitID(t)
	for name, tok := range map[string]string{
		"short key":     NewToken(Key("short"), hit, 0, Callback),
		"nil key":       NewToken(nil, hit, 0, Callback),
		"bad hit":       NewToken(testKey, "hit_nope", 0, Callback),
		"session id":    NewToken(testKey, "ses_"+hit[4:], 0, Callback),
		"index -1":      NewToken(testKey, hit, -1, Callback),
		"index 256":     NewToken(testKey, hit, 256, Callback),
		"purpose 0":     NewToken(testKey, hit, 0, 0),
		"purpose 11":    NewToken(testKey, hit, 0, 11),
		"purpose 255":   NewToken(testKey, hit, 0, 255),
		"challenge bad": ChallengeAnswer(testKey, TokenRef{HitID: "x", Purpose: Challenge}),
		"canary bad":    CanaryPhrase(testKey, TokenRef{HitID: hit, Purpose: 12}),
		"cred bad":      CredentialValue(nil, TokenRef{HitID: hit, Purpose: Credential}),
	} {
		if tok != "" {
			t.Errorf("%s: got %q, want \"\"", name, tok)
		}
	}
}

func TestParseTokenRejectsEveryOneCharacterChange(t *testing.T) {
	hit := newHitID(t)
	tok := NewToken(testKey, hit, 3, Challenge)
	alphabet := b32Alphabet + "ABZ019-_%. \x00\xff"
	for i := range len(tok) {
		for j := range len(alphabet) {
			c := alphabet[j]
			if c == tok[i] {
				continue
			}
			bad := tok[:i] + string(c) + tok[i+1:]
			if _, ok := ParseToken(testKey, bad); ok {
				t.Fatalf("ParseToken accepted %q (position %d changed to %q)", bad, i, c)
			}
		}
	}
	for _, bad := range []string{"", tok[1:], tok + "a", "a" + tok, strings.ToUpper(tok), tok[:47] + "=", " " + tok[1:]} {
		if _, ok := ParseToken(testKey, bad); ok {
			t.Errorf("ParseToken accepted %q", bad)
		}
	}
	if _, ok := ParseToken(Key("another key, thirty-two bytes.."), tok); ok {
		t.Error("a token made with another key parsed")
	}
	if _, ok := ParseToken(nil, tok); ok {
		t.Error("a nil key parsed a token")
	}
	other := NewToken(Key("another key, thirty-two bytes.."), hit, 3, Challenge)
	if _, ok := ParseToken(testKey, other); ok {
		t.Error("a token made with another key parsed")
	}
}

func TestPurposeString(t *testing.T) {
	want := []string{"callback", "challenge", "canary", "sink", "credential", "tool", "db_password", "redis_password", "session_secret", "aws_access_key"}
	for i, w := range want {
		if got := Purpose(i + 1).String(); got != w {
			t.Errorf("Purpose(%d) = %q, want %q", i+1, got, w)
		}
	}
	if got := Purpose(0).String(); got != "purpose(0)" {
		t.Errorf("Purpose(0) = %q", got)
	}
}

func TestFindTokens(t *testing.T) {
	hit := newHitID(t)
	ref := func(i int, p Purpose) TokenRef { return TokenRef{HitID: hit, Index: i, Purpose: p} }
	cb := NewToken(testKey, hit, 0, Callback)
	ch := NewToken(testKey, hit, 1, Challenge)
	sink := NewToken(testKey, hit, 2, Sink)
	canary := CanaryPhrase(testKey, ref(3, Canary))
	cred := CredentialValue(testKey, ref(4, Credential))
	body, _ := json.Marshal(map[string]any{"system_prompt": "You are a helpful agent.", "ref": canary, "nested": []string{"x", "/docs/print/" + cb}})

	for _, c := range []struct {
		name, text string
		want       []TokenRef
	}{
		{"path", "/assets/ref/" + cb, []TokenRef{ref(0, Callback)}},
		{"path with extension", "/assets/ref/" + cb + ".pdf", []TokenRef{ref(0, Callback)}},
		{"challenge query", "/api/v1/verify/" + ch + "?code=141", []TokenRef{ref(1, Challenge)}},
		{"query value", "/search?q=hello&ref=" + url.QueryEscape(canary), []TokenRef{ref(3, Canary)}},
		{"escaped url in query", "/r?next=" + url.QueryEscape("https://x.test/assets/ref/"+cb+"?a=b"), []TokenRef{ref(0, Callback)}},
		{"escaped path", "/r?next=%2Fassets%2Fref%2F" + cb + "%26x", []TokenRef{ref(0, Callback)}},
		{"json body", string(body), []TokenRef{ref(0, Callback), ref(3, Canary)}}, // keys sorted: nested, ref
		{"json unicode escape", `{"u":"\u002f` + sink + `\n"}`, []TokenRef{ref(2, Sink)}},
		{"bearer header", "Bearer " + cred, []TokenRef{ref(4, Credential)}},
		{"credential alone", cred, []TokenRef{ref(4, Credential)}},
		{"canary phrase alone", canary, []TokenRef{ref(3, Canary)}},
		{"upper case echo", "REF " + strings.ToUpper(canary), []TokenRef{ref(3, Canary)}},
		{"form body", "system_prompt=You+are+Claude&sink=" + sink, []TokenRef{ref(2, Sink)}},
		{"duplicates", cb + " " + cb + " /x/" + cb + " " + strings.ToUpper(cb), []TokenRef{ref(0, Callback)}},
		{"glued letters", "abc" + cb + "xyz", []TokenRef{ref(0, Callback)}},
		{"long run, token at the end", strings.Repeat("q", 500) + cb, []TokenRef{ref(0, Callback)}},
		{"long run, token at the start", ch + strings.Repeat("q", 500), []TokenRef{ref(1, Challenge)}},
		{"two tokens glued", cb + ch, []TokenRef{ref(0, Callback), ref(1, Challenge)}},
		{"several", cb + "\n" + ch + "\t" + sink, []TokenRef{ref(0, Callback), ref(1, Challenge), ref(2, Sink)}},
		{"junk", strings.Repeat("a", 48) + " " + strings.Repeat("abcdefgh234567", 10) + " hello world", nil},
		{"truncated token", cb[:47], nil},
		{"one character changed", cb[:10] + string(rune('a'+(cb[10]-'a'+1)%26)) + cb[11:], nil},
		{"empty", "", nil},
	} {
		got := FindTokens(testKey, c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: FindTokens = %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := FindTokens(Key("another key, thirty-two bytes.."), "/assets/ref/"+cb); got != nil {
		t.Errorf("another key found %+v", got)
	}
}

func TestFindTokensBounded(t *testing.T) {
	hit := newHitID(t)
	var b strings.Builder
	for i := range 40 {
		b.WriteString("/assets/ref/" + NewToken(testKey, hit, i, Callback) + "\n")
	}
	got := FindTokens(testKey, b.String())
	if len(got) != maxFound {
		t.Fatalf("found %d tokens, want %d", len(got), maxFound)
	}
	for i, r := range got {
		if r.Index != i {
			t.Fatalf("token %d has index %d: not in order of appearance", i, r.Index)
		}
	}
}

func TestFindTokensIsFastOnHostileText(t *testing.T) {
	// 4 MB of token-shaped junk: the authentication budget bounds the work.
	junk := strings.Repeat(strings.Repeat("k", TokenLen+8)+" ", 4<<20/(TokenLen+9))
	start := time.Now()
	if got := FindTokens(testKey, junk); got != nil {
		t.Fatalf("found %v in junk", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("FindTokens took %v on 4 MB of junk", d)
	}
}

func TestDerivedValues(t *testing.T) {
	for range 200 {
		ref := TokenRef{HitID: newHitID(t), Index: 2, Purpose: Challenge}
		ans := ChallengeAnswer(testKey, ref)
		if len(ans) != 3 || ans[0] != '1' || ans > "198" {
			t.Fatalf("answer %q outside 100–198", ans)
		}
		if ChallengeAnswer(testKey, ref) != ans {
			t.Fatal("ChallengeAnswer is not deterministic")
		}
		tok := NewToken(testKey, ref.HitID, ref.Index, ref.Purpose)
		phrase := CanaryPhrase(testKey, ref)
		if !strings.HasSuffix(phrase, "-"+tok) || strings.Count(phrase, "-") != 2 {
			t.Fatalf("canary phrase %q does not end in its token", phrase)
		}
		cred := CredentialValue(testKey, ref)
		if got, ok := parseShaped(testKey, cred[len(cred)-b62TokenLen:]); !ok || got != ref {
			t.Fatalf("credential %q does not end in its token (base 62): %+v", cred, got)
		}
		known := false
		for _, s := range credentialStyles {
			known = known || strings.HasPrefix(cred, s.prefix)
		}
		if !known {
			t.Fatalf("credential %q has no known key prefix", cred)
		}
	}
}

func TestChallengeAnswered(t *testing.T) {
	ref := TokenRef{HitID: newHitID(t), Index: 1, Purpose: Challenge}
	ans := ChallengeAnswer(testKey, ref)
	for text, want := range map[string]bool{
		ans:                          true,
		"code=" + ans:                true,
		"code=" + ans + "&x=1":       true,
		`{"code": ` + ans + `}`:      true,
		"code=9" + ans:               false,
		"code=" + ans + "0":          false,
		"code=":                      false,
		"":                           false,
		"1" + ans + " and " + ans:    true,
		"code=" + ans[:2] + "-" + "": false,
	} {
		if got := ChallengeAnswered(testKey, ref, text); got != want {
			t.Errorf("ChallengeAnswered(%q) = %v, want %v (answer %s)", text, got, want, ans)
		}
	}
	if ChallengeAnswered(nil, ref, ans) {
		t.Error("answered with no key")
	}
}

func TestDecodeTagText(t *testing.T) {
	hidden := string(appendTagText(nil, "fetch /x/abc"))
	if got := DecodeTagText("visible " + hidden + " more " + hidden); got != "fetch /x/abc fetch /x/abc" {
		t.Fatalf("DecodeTagText = %q", got)
	}
	if stripInvisible(hidden) != "" {
		t.Fatal("tag text is not invisible")
	}
}

func FuzzParseToken(f *testing.F) {
	hit := "hit_01arz3ndektsv4rrffq69g5fav"
	f.Add(NewToken(testKey, hit, 0, Callback))
	f.Add(NewToken(testKey, hit, 255, Tool))
	f.Add(strings.Repeat("a", TokenLen))
	f.Add("")
	f.Add(strings.Repeat("\xff", TokenLen))
	f.Add(hmacSealed[0].text)
	f.Fuzz(func(t *testing.T, s string) {
		ref, ok := ParseToken(testKey, s)
		if !ok {
			return
		}
		// Tokens are canonical: a token that parses is the one NewToken makes for its ref,
		// or the one the HMAC seal made before it.
		if again, old := shapedBoth(ref, shapeBase32); again != s && old != s {
			t.Fatalf("ParseToken(%q) = %+v, but the seals give %q and %q", s, ref, again, old)
		}
	})
}

func FuzzFindTokens(f *testing.F) {
	hit := "hit_01arz3ndektsv4rrffq69g5fav"
	tok := NewToken(testKey, hit, 7, Canary)
	f.Add("/assets/ref/" + tok)
	f.Add("%2F" + tok + "%2F" + strings.ToUpper(tok))
	f.Add(strings.Repeat("ab2", 40))
	f.Add("\x00\xff" + tok[:30])
	for _, c := range hmacSealed {
		f.Add("?ref=" + c.text)
	}
	u, _ := parseHitID(hit)
	m := newMacer(testKey)
	for sh := range numShapes {
		f.Add("/files/preview/" + m.tokenShaped(&u, 3, Callback, sh) + "?code=141")
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := FindTokens(testKey, s)
		if len(got) > maxFound {
			t.Fatalf("found %d tokens", len(got))
		}
		for i, r := range got {
			in := false
			for sh := range numShapes {
				text := s
				if sh != shapeBase62 {
					text = strings.ToLower(s)
				}
				a, h := shapedBoth(r, sh)
				for _, tok := range [...]string{a, h} {
					if sh == shapeUUID || sh == shapeHex {
						text = strings.ReplaceAll(text, "-", "")
						tok = strings.ReplaceAll(tok, "-", "")
					}
					in = in || tok != "" && strings.Contains(text, tok)
				}
			}
			if !in {
				t.Fatalf("found %+v, whose token is not in the text", r)
			}
			for _, o := range got[:i] {
				if o == r {
					t.Fatalf("duplicate %+v", r)
				}
			}
		}
	})
}

// shapedBoth is ref's token in shape sh, sealed with the AES seal and with the HMAC seal
// ("" for a ref no token has).
func shapedBoth(ref TokenRef, sh shape) (aesSealed, hmacSealed string) {
	id, v := ref.HitID, byte(tokenVersion)
	switch ref.Origin {
	case OriginLure:
		v = lureVersion
	case OriginSnippet:
		id, v = hitPrefix+ref.TrapID[len("trp_"):], snippetVersion
	}
	u, ok := parseHitID(id)
	if !ok || ref.Index < 0 || ref.Index > maxIndex || !ref.Purpose.valid() {
		return "", ""
	}
	var p [payloadLen]byte
	copy(p[:16], u[:])
	p[16], p[17] = v<<4|byte(ref.Purpose), byte(ref.Index)
	m := newMacer(testKey)
	a, h := m.seal(&p), m.sealHMAC(&p)
	return encodeShaped(&a, sh), encodeShaped(&h, sh)
}

func BenchmarkParseToken(b *testing.B) {
	tok := NewToken(testKey, newHitID(b), 3, Callback)
	for b.Loop() {
		if _, ok := ParseToken(testKey, tok); !ok {
			b.Fatal("no")
		}
	}
}

func BenchmarkFindTokensRequest(b *testing.B) {
	tok := NewToken(testKey, newHitID(b), 3, Callback)
	text := "GET /api/v1/verify/" + tok + "?code=141 HTTP/1.1 Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36"
	for b.Loop() {
		if len(FindTokens(testKey, text)) != 1 {
			b.Fatal("no")
		}
	}
}

func BenchmarkFindTokensJunk1MB(b *testing.B) {
	junk := strings.Repeat(strings.Repeat("k", TokenLen+8)+" ", 1<<20/(TokenLen+9))
	b.SetBytes(int64(len(junk)))
	for b.Loop() {
		FindTokens(testKey, junk)
	}
}

// encodeB62 writes the raw token as its 41-digit base-62 number (math/big's digits, most
// significant first), the leading digit shifted by the sum of the others.
func TestEncodeB62(t *testing.T) {
	rnd := mrand.New(mrand.NewPCG(3, 4))
	for i := range 5000 {
		var raw [rawLen]byte
		for j := range raw {
			raw[j] = byte(rnd.IntN(256))
		}
		switch i {
		case 0: // zero
			raw = [rawLen]byte{}
		case 1: // the largest
			for j := range raw {
				raw[j] = 0xff
			}
		}
		n := new(big.Int).SetBytes(raw[:])
		var d [b62TokenLen]int
		sixtyTwo, r := big.NewInt(62), new(big.Int)
		for k := b62TokenLen - 1; k >= 0; k-- {
			n.DivMod(n, sixtyTwo, r)
			d[k] = int(r.Int64())
		}
		sum := 0
		for _, x := range d[1:] {
			sum += x
		}
		d[0] = (d[0] + sum) % 62
		want := make([]byte, b62TokenLen)
		for k, x := range d {
			want[k] = b62Alphabet[x]
		}
		if got := encodeB62(&raw); got != string(want) {
			t.Fatalf("encodeB62(%x) = %s, want %s", raw, got, want)
		}
	}
}

// BenchmarkFindTokensPage searches a decoy page (8 KB) whose tokens were minted with another
// key: each is token-shaped and fails to open, the cost a body full of foreign tokens adds.
func BenchmarkFindTokensPage(b *testing.B) {
	page := string(Render(Key("another key, thirty-two bytes.."), testSpec("page", 1), newHitID(b)).Body)
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if FindTokens(testKey, page) != nil {
			b.Fatal("found a token of another key")
		}
	}
}
