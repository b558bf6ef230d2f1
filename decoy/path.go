package decoy

import (
	"crypto/rand"
	"math/big"
	"strings"
)

// Types are the decoy kinds the engine serves: the allowed values of a trap's type.
var Types = []string{"page", "api", "llms_txt", "robots", "credential", "mcp"}

// Plausible paths per trap type: the kind of place a crawler or agent expects to find such a thing.
var pathStems = map[string][]string{
	"page": {
		"/internal/docs/", "/admin/portal/", "/wiki/engineering/", "/staff/handbook/",
		"/intranet/reports/", "/docs/internal/", "/backoffice/",
	},
	"api": {
		"/api/internal/v1/", "/api/v2/admin/", "/api/private/", "/internal/api/", "/v1/internal/",
	},
	"credential": {
		"/.env.backup/", "/config/", "/deploy/secrets/", "/.aws/", "/backup/config/",
	},
	"mcp": {"/mcp/", "/.well-known/mcp/", "/api/mcp/"},
}

var pathWords = []string{
	"accounts", "billing", "customers", "exports", "finance", "inventory", "keys",
	"onboarding", "payroll", "pricing", "roadmap", "settings", "tokens", "users", "vendors",
}

// FixedPaths are the well-known files some trap types live at.
var FixedPaths = map[string]string{
	"llms_txt": "/llms.txt",
	"robots":   "/robots.txt",
}

// Path picks a plausible path for a new trap of type typ.
func Path(typ string) string {
	if p, ok := FixedPaths[typ]; ok {
		return p
	}
	stems, ok := pathStems[typ]
	if !ok {
		stems = pathStems["page"]
	}
	return pick(stems) + pick(pathWords) + "-" + strings.ToLower(randomToken(4))
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
