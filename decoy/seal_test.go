package decoy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// cmacOf is an aesSeal that can only CMAC, under key.
func cmacOf(tb testing.TB, key []byte) *aesSeal {
	tb.Helper()
	var a aesSeal
	var err error
	if a.tag, err = aes.NewCipher(key); err != nil {
		tb.Fatal(err)
	}
	var l [16]byte
	a.tag.Encrypt(l[:], l[:])
	a.k1 = cmacDouble(l)
	a.k2 = cmacDouble(a.k1)
	return &a
}

// The AES-CMAC of RFC 4493, section 4 (its subkeys and its four examples).
func TestCMACVectors(t *testing.T) {
	a := cmacOf(t, unhex(t, "2b7e1516 28aed2a6 abf71588 09cf4f3c"))
	if hex.EncodeToString(a.k1[:]) != "fbeed618357133667c85e08f7236a8de" || hex.EncodeToString(a.k2[:]) != "f7ddac306ae266ccf90bc11ee46d513b" {
		t.Fatalf("subkeys %x %x", a.k1, a.k2)
	}
	msg := unhex(t, "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51"+
		"30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710")
	for _, v := range []struct {
		n    int
		want string
	}{
		{0, "bb1d6929e95937287fa37d129b756746"},
		{16, "070a16b46b4d4144f79bdd9dd04a287c"},
		{40, "dfa66747de9ae63030ca32611497c827"},
		{64, "51f0bebf7e3b9d92fc49741779363cfe"},
	} {
		if got := a.cmac(msg[:v.n]); hex.EncodeToString(got[:]) != v.want {
			t.Errorf("CMAC of %d bytes = %x, want %s", v.n, got, v.want)
		}
	}
}

// The AES seal is what seal.go says, computed here with the standard library's HKDF and CTR
// (and the CMAC the vectors check), and a token of fixed inputs never changes.
func TestAESSealDefinition(t *testing.T) {
	k, err := hkdf.Key(sha256.New, testKey, nil, "flytrap decoy token seal: AES-CMAC tag, AES-CTR stream", 32)
	if err != nil {
		t.Fatal(err)
	}
	cm := cmacOf(t, k[:16])
	ctrBlock, _ := aes.NewCipher(k[16:])
	m := newMacer(testKey)
	rnd := mrand.New(mrand.NewPCG(1, 2))
	for range 1000 {
		p := randomPayload(rnd)
		raw := m.seal(&p)
		tag := cm.cmac(p[:])
		var want [rawLen]byte
		copy(want[:], tag[:tagLen])
		iv := make([]byte, 16)
		copy(iv, tag[:tagLen])
		cipher.NewCTR(ctrBlock, iv).XORKeyStream(want[tagLen:], p[:])
		if raw != want {
			t.Fatalf("seal(%x) = %x, want %x", p, raw, want)
		}
		if got, ok := m.open(&raw); !ok || got != p {
			t.Fatalf("open(seal(%x)) = %x, %v", p, got, ok)
		}
	}
	// Pinned: a change of the seal would change this token, and every token planted since.
	if got := NewToken(testKey, "hit_01arz3ndektsv4rrffq69g5fav", 7, Canary); got != "iyrwp65yumiyxyu4nqdq6r7v2v3vxlttxjrlyf6kbug6styw" {
		t.Fatalf("NewToken = %q", got)
	}
}

// Tokens the HMAC seal minted before the AES seal came (decoy/token.go at 621ed3f, with
// testKey): they are planted on the internet and stored in hits, and still open.
var hmacSealed = []struct {
	name, text string
	want       TokenRef
}{
	{"base 32", "gxcrqi4kemhxs7ednq5r6eq3y5o3d7hni6wznmhvvrwj2c2a", TokenRef{HitID: "hit_01arz3ndektsv4rrffq69g5fav", Index: 7, Purpose: Canary}},
	{"base 62 (a credential)", "ref5OgkDuMy6VVpr8MP1Mshxc06hqcWlXLFiw7O3E", TokenRef{HitID: "hit_01arz3ndektsv4rrffq69g5fav", Index: 3, Purpose: Credential}},
	{"UUID-like", "fb74149b-2185-f059-02bf-5c882d9bf0a3-54803a65e34cbc6ed8a60e341566", TokenRef{HitID: "hit_01arz3ndektsv4rrffq69g5fav", Index: 200, Purpose: Callback}},
	{"hex", "0e0bd7d926be73fd3adee18d347c0f988ac142cb5217a0893f43f914fbb2", TokenRef{HitID: "hit_01arz3ndektsv4rrffq69g5fav", Index: 0, Purpose: Sink}},
	{"lure", "b7wxf5cpttatavalf7b5du2ombvnh5o63x5d2xkm6fkxr3sv", TokenRef{HitID: "hit_01arz3ndektsv4rrffq69g5fav", Index: 2, Purpose: Challenge, Origin: OriginLure}},
	{"snippet", "v32tpbkwnhyo6vkxjte5hp5zru5w4w4csni5qtd6a2gxx64c", TokenRef{TrapID: "trp_01arz3ndektsv4rrffq69g5fav", Purpose: Callback, Origin: OriginSnippet}},
}

func TestHMACSealedTokensStillOpen(t *testing.T) {
	for _, c := range hmacSealed {
		got := FindTokens(testKey, "/assets/ref/"+c.text+"?x=1")
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: FindTokens = %+v, want %+v", c.name, got, c.want)
		}
		if got := FindTokens(Key("another key, thirty-two bytes.."), c.text); got != nil {
			t.Errorf("%s: another key found %+v", c.name, got)
		}
	}
	if ref, ok := ParseToken(testKey, hmacSealed[0].text); !ok || ref != hmacSealed[0].want {
		t.Errorf("ParseToken = %+v, %v", ref, ok)
	}
	// A snippet is pasted into pages and caches: it keeps its HMAC-sealed token.
	if got := SnippetToken(testKey, "trp_01arz3ndektsv4rrffq69g5fav"); got != hmacSealed[5].text {
		t.Errorf("SnippetToken = %q, want %q", got, hmacSealed[5].text)
	}
	// Forgery resistance holds for the old seal too: no one-character change opens.
	old := hmacSealed[0].text
	for i := range len(old) {
		for _, c := range []byte(b32Alphabet) {
			if c == old[i] {
				continue
			}
			if bad := old[:i] + string(c) + old[i+1:]; len(FindTokens(testKey, bad)) != 0 {
				t.Fatalf("%q (position %d changed) parsed", bad, i)
			}
		}
	}
}

// Each seal opens only its own tokens: an AES-sealed raw token never opens as an HMAC one,
// nor the reverse, so a token has one meaning.
func TestSealsAreSeparate(t *testing.T) {
	m := newMacer(testKey)
	rnd := mrand.New(mrand.NewPCG(5, 6))
	for range 1000 {
		p := randomPayload(rnd)
		a, h := m.seal(&p), m.sealHMAC(&p)
		if _, ok := m.openHMAC(&a); ok {
			t.Fatalf("the AES seal of %x opens with HMAC", p)
		}
		if _, ok := m.openAES(&h); ok {
			t.Fatalf("the HMAC seal of %x opens with AES", p)
		}
		if got, ok := m.open(&h); !ok || got != p {
			t.Fatalf("open(sealHMAC(%x)) = %x, %v", p, got, ok)
		}
	}
}

// The two seals side by side: sealing, opening, and failing to open a non-token (what
// FindTokens pays for each token-shaped window of a request that holds none: both seals).
func BenchmarkSeal(b *testing.B) {
	m := newMacer(testKey)
	var p [payloadLen]byte
	copy(p[:], "an 18-byte payload")
	junk, _ := decodeToken(strings.Repeat("k", TokenLen), &b32Dec)
	for _, c := range []struct {
		name string
		seal func(*[payloadLen]byte) [rawLen]byte
		open func(*[rawLen]byte) ([payloadLen]byte, bool)
	}{
		{"aes", m.seal, m.openAES},
		{"hmac", m.sealHMAC, m.openHMAC},
	} {
		raw := c.seal(&p)
		b.Run("seal/"+c.name, func(b *testing.B) {
			for b.Loop() {
				raw = c.seal(&p)
			}
		})
		b.Run("open/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := c.open(&raw); !ok {
					b.Fatal("no")
				}
			}
		})
	}
	b.Run("open/junk", func(b *testing.B) {
		for b.Loop() {
			if _, ok := m.open(&junk); ok {
				b.Fatal("junk opened")
			}
		}
	})
}

// randomPayload is a payload of random bytes from rnd.
func randomPayload(rnd *mrand.Rand) [payloadLen]byte {
	var p [payloadLen]byte
	for i := range p {
		p[i] = byte(rnd.IntN(256))
	}
	return p
}
