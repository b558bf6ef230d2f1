package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// The rate limit taken before the key lookup holds whatever the spelling of the header: the
// same key with more whitespace after "Bearer" (which authentication accepts) used to be a
// header never seen, so each spelling of a limited key cost a lookup again (and an entry of
// the cache of headers). Shown as TestRateLimitBeforeTheKeyLookup shows it: the key revoked
// underneath still answers 429 while its bucket is empty, whatever the spelling.
func TestRateLimitBeforeTheLookupIgnoresSpelling(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) { c.RateLimit, c.RateBurst = 0.5, 2 })
		a := env.Tenant("a")
		get := func(token string) int {
			res, _ := env.Get(token, "/dashboard/api/traps")
			return res.StatusCode
		}
		for i := range 2 {
			if s := get(a.ReadOnly); s != http.StatusOK {
				t.Fatalf("request %d within the burst: %d", i, s)
			}
		}
		q := "UPDATE api_keys SET revoked_at = ? WHERE org_id = ?"
		if b.Name == "postgres" {
			q = "UPDATE api_keys SET revoked_at = $1 WHERE org_id = $2"
		}
		if _, err := env.DB.SQL.ExecContext(context.Background(), q, time.Now().UTC(), a.Org.ID); err != nil {
			t.Fatal(err)
		}
		for _, token := range []string{a.ReadOnly, " " + a.ReadOnly, "  " + a.ReadOnly, "\t" + a.ReadOnly, a.ReadOnly + " "} {
			if s := get(token); s != http.StatusTooManyRequests {
				t.Errorf("Bearer %q on an empty bucket: %d, want 429 before any lookup", token, s)
			}
		}
	})
}
