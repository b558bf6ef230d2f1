package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// outsiders are bytes that must never appear in a key body.
const outsiders = "_-+/= .\x00\x7f\xff\xc3"

func mustGenerate(t testing.TB) Key {
	t.Helper()
	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return k
}

func TestGenerateShape(t *testing.T) {
	k := mustGenerate(t)
	if len(k.Plaintext) != 40 {
		t.Fatalf("len(Plaintext) = %d, want 40", len(k.Plaintext))
	}
	if !strings.HasPrefix(k.Plaintext, Prefix) {
		t.Fatalf("Plaintext %q lacks prefix %q", k.Plaintext, Prefix)
	}
	if !WellFormed(k.Plaintext) {
		t.Fatalf("WellFormed(%q) = false", k.Plaintext)
	}
	if k.Hash != Hash(k.Plaintext) {
		t.Fatalf("Hash = %q, want Hash(Plaintext) = %q", k.Hash, Hash(k.Plaintext))
	}
	if want := k.Plaintext[:10]; k.DisplayPrefix != want {
		t.Fatalf("DisplayPrefix = %q, want %q", k.DisplayPrefix, want)
	}
	if strings.Contains(k.Hash, k.Plaintext[len(Prefix):]) {
		t.Fatal("Hash contains the secret")
	}
}

func TestGenerateDistinctAndWellFormed(t *testing.T) {
	const n = 1000
	plain := make(map[string]bool, n)
	hashes := make(map[string]bool, n)
	// Count how often each alphabet character shows up in the secret so a
	// broken sampler (e.g. only digits, or never 'z') is caught.
	seen := make(map[byte]int)
	for range n {
		k := mustGenerate(t)
		if !WellFormed(k.Plaintext) {
			t.Fatalf("generated key %q is not well formed", k.Plaintext)
		}
		if plain[k.Plaintext] {
			t.Fatalf("duplicate key %q", k.Plaintext)
		}
		if hashes[k.Hash] {
			t.Fatalf("duplicate hash %q", k.Hash)
		}
		plain[k.Plaintext] = true
		hashes[k.Hash] = true
		for i := len(Prefix); i < len(Prefix)+secretLen; i++ {
			seen[k.Plaintext[i]]++
		}
	}
	// 30000 draws over 62 symbols: each is expected ~484 times; missing any
	// of them by chance is astronomically unlikely.
	for i := range len(alphabet) {
		if seen[alphabet[i]] == 0 {
			t.Errorf("secret character %q never generated in %d keys", alphabet[i], n)
		}
	}
	if len(seen) != len(alphabet) {
		t.Errorf("secrets used %d distinct characters, want %d", len(seen), len(alphabet))
	}
}

// TestChecksumGolden pins the wire format: changing the alphabet order, the
// CRC polynomial or the padding would invalidate every issued key.
func TestChecksumGolden(t *testing.T) {
	// Computed independently with Python's zlib.crc32 and a base62 encoder.
	golden := []string{
		"ftk_0000000000000000000000000000002C8GjS",
		"ftk_abcdefghijklmnopqrstuvwxyz01232LolCm",
		"ftk_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz4IlJEz",
		"ftk_00000000000000000000000000040500azb7", // CRC 8816593: zero-padded
	}
	for _, s := range golden {
		if !WellFormed(s) {
			t.Errorf("WellFormed(%q) = false, want true", s)
		}
	}
}

func TestEverySingleCharacterMutationFails(t *testing.T) {
	candidates := alphabet + outsiders + "FTKftk"
	for range 5 {
		key := mustGenerate(t).Plaintext
		for i := range len(key) {
			for j := range len(candidates) {
				c := candidates[j]
				if c == key[i] {
					continue
				}
				m := []byte(key)
				m[i] = c
				if WellFormed(string(m)) {
					t.Fatalf("mutation of %q at %d to %q is still well formed: %q", key, i, c, m)
				}
			}
		}
	}
}

func TestAdjacentSwapFails(t *testing.T) {
	// Transposition is the other common typo; CRC32 catches swaps of two
	// different characters because they form a burst shorter than 32 bits.
	for range 5 {
		key := mustGenerate(t).Plaintext
		for i := len(Prefix); i+1 < len(key); i++ {
			if key[i] == key[i+1] {
				continue
			}
			m := []byte(key)
			m[i], m[i+1] = m[i+1], m[i]
			if WellFormed(string(m)) {
				t.Fatalf("swap of %q at %d is still well formed: %q", key, i, m)
			}
		}
	}
}

func TestWellFormedRejects(t *testing.T) {
	key := mustGenerate(t).Plaintext
	body := key[len(Prefix):]
	tests := map[string]string{
		"empty":                "",
		"prefix only":          Prefix,
		"no prefix":            body,
		"upper-case prefix":    "FTK_" + body,
		"github prefix":        "ghp_" + body,
		"dash prefix":          "ftk-" + body,
		"one short":            key[:len(key)-1],
		"one long":             key + "0",
		"doubled":              key + key,
		"leading space":        " " + key[:len(key)-1],
		"trailing newline":     key + "\n",
		"trailing newline cut": key[:len(key)-1] + "\n",
		"non-ascii":            key[:len(key)-2] + "é",
		"underscore in body":   key[:20] + "_" + key[21:],
		"zero checksum":        key[:len(key)-checksumLen] + "000000",
		"max checksum":         key[:len(key)-checksumLen] + "zzzzzz",
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			if WellFormed(s) {
				t.Fatalf("WellFormed(%q) = true, want false", s)
			}
		})
	}
}

func TestHash(t *testing.T) {
	key := mustGenerate(t).Plaintext
	h := Hash(key)
	if len(h) != 64 {
		t.Fatalf("len(Hash) = %d, want 64", len(h))
	}
	if strings.ToLower(h) != h {
		t.Fatalf("Hash %q is not lower case", h)
	}
	if _, err := hex.DecodeString(h); err != nil {
		t.Fatalf("Hash %q is not hex: %v", h, err)
	}
	if Hash(key) != h {
		t.Fatal("Hash is not stable")
	}
	sum := sha256.Sum256([]byte(key))
	if want := hex.EncodeToString(sum[:]); h != want {
		t.Fatalf("Hash = %q, want SHA-256 %q", h, want)
	}
	// Known vector, so the stored format cannot drift silently.
	const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := Hash("abc"); got != abc {
		t.Fatalf(`Hash("abc") = %q, want %q`, got, abc)
	}
	if Hash(key) == Hash(mustGenerate(t).Plaintext) {
		t.Fatal("different keys share a hash")
	}
}

func TestEqual(t *testing.T) {
	a := Hash(mustGenerate(t).Plaintext)
	b := Hash(mustGenerate(t).Plaintext)
	tests := []struct {
		name string
		x, y string
		want bool
	}{
		{"same", a, a, true},
		{"same value different backing", a, strings.Clone(a), true},
		{"different", a, b, false},
		{"prefix", a, a[:63], false},
		{"case differs", a, strings.ToUpper(a), a == strings.ToUpper(a)},
		{"empty left", "", a, false},
		{"empty right", a, "", false},
		{"both empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Equal(tt.x, tt.y); got != tt.want {
				t.Fatalf("Equal(%q, %q) = %v, want %v", tt.x, tt.y, got, tt.want)
			}
		})
	}
}

func TestKeyFormattingHidesPlaintext(t *testing.T) {
	k := mustGenerate(t)
	secret := k.Plaintext[len(k.DisplayPrefix):]

	var logged strings.Builder
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	logger.Info("created", "key", k)
	textLogger := slog.New(slog.NewTextHandler(&logged, nil))
	textLogger.Info("created", "key", k)

	outputs := map[string]string{
		"%v":  fmt.Sprintf("%v", k),
		"%s":  fmt.Sprintf("%s", k),
		"%+v": fmt.Sprintf("%+v", k),
		"%#v": fmt.Sprintf("%#v", k),
		"log": logged.String(),
	}
	for verb, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("%s output leaks the secret: %s", verb, out)
		}
		if !strings.Contains(out, k.DisplayPrefix) {
			t.Errorf("%s output lacks the display prefix: %s", verb, out)
		}
	}
}

func FuzzWellFormed(f *testing.F) {
	k, err := Generate()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		"", Prefix, k.Plaintext, k.Plaintext[:39], k.Plaintext + "x",
		"ftk_0000000000000000000000000000002C8GjS",
		"ftk_000000000000000000000000000000000000",
		"ftk_" + strings.Repeat("\xff", 36),
		strings.Repeat("é", 20),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !WellFormed(s) {
			return
		}
		// Anything accepted must really have the documented shape.
		if len(s) != keyLen || !strings.HasPrefix(s, Prefix) {
			t.Fatalf("accepted %q with wrong length or prefix", s)
		}
		for i := len(Prefix); i < len(s); i++ {
			if !strings.ContainsRune(alphabet, rune(s[i])) {
				t.Fatalf("accepted %q with non-base62 byte at %d", s, i)
			}
		}
		secret := s[len(Prefix) : len(Prefix)+secretLen]
		if got := string(appendChecksum(nil, []byte(secret))); got != s[len(Prefix)+secretLen:] {
			t.Fatalf("accepted %q with checksum %q, want %q", s, s[len(Prefix)+secretLen:], got)
		}
		if len(Hash(s)) != 64 {
			t.Fatalf("Hash(%q) has wrong length", s)
		}
	})
}

func BenchmarkWellFormedAndHash(b *testing.B) {
	k, err := Generate()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !WellFormed(k.Plaintext) {
			b.Fatal("not well formed")
		}
		if !Equal(Hash(k.Plaintext), k.Hash) {
			b.Fatal("hash mismatch")
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(); err != nil {
			b.Fatal(err)
		}
	}
}
