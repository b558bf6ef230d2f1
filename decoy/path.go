package decoy

import (
	"crypto/rand"
	"math/big"
	"strings"
)

var pathWords = []string{
	"accounts", "billing", "customers", "exports", "finance", "inventory", "keys",
	"onboarding", "payroll", "pricing", "roadmap", "settings", "tokens", "users", "vendors",
}

// Path picks a plausible path for a new trap of kind name: its fixed path, or one of its
// stems, a business word and four random characters. An unknown kind panics.
func Path(name string) string {
	k := MustKind(name)
	if k.FixedPath != "" {
		return k.FixedPath
	}
	return pick(k.Stems) + pick(pathWords) + "-" + strings.ToLower(randomToken(4))
}

func pick(list []string) string {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(list))))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return list[n.Int64()]
}

// randomToken returns n random base32 characters.
func randomToken(n int) string { return rand.Text()[:n] }
