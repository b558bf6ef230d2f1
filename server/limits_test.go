package server_test

import (
	"net/http"
	"strconv"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

func TestRateLimitPerKey(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.RateLimit, c.RateBurst = 0.01, 3 })
	a := env.Tenant("acme")
	for i := range 3 {
		res, _ := env.Get(a.ReadOnly, "/dashboard/api/analytics/severity")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
		if got := res.Header.Get("X-RateLimit-Remaining"); got != strconv.Itoa(2-i) {
			t.Fatalf("request %d: X-RateLimit-Remaining %q, want %d", i, got, 2-i)
		}
		if res.Header.Get("X-RateLimit-Limit") != "3" || res.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("headers %v", res.Header)
		}
	}
	res, body := env.Get(a.ReadOnly, "/dashboard/api/analytics/severity")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Fatalf("4th request: %d %s (Retry-After %q)", res.StatusCode, body, res.Header.Get("Retry-After"))
	}
	if r := env.GraphQL(a.ReadOnly, `{ organization { id } }`, nil); r.Status != http.StatusTooManyRequests || r.Code() != "RATE_LIMITED" {
		t.Fatalf("GraphQL over the limit: %d %s", r.Status, r.Raw)
	}
	// Another key has its own bucket.
	if res, _ := env.Get(a.Admin, "/dashboard/api/analytics/severity"); res.StatusCode != http.StatusOK {
		t.Fatalf("other key: %d", res.StatusCode)
	}
}

func TestAPIVersionHeader(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	do := func(version string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
		if version != "" {
			req.Header.Set("Flytrap-Version", version)
		}
		res, err := env.HTTP.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := do("")
	current := res.Header.Get("Flytrap-Version")
	if res.StatusCode != http.StatusOK || len(current) != len("2006-01-02") {
		t.Fatalf("no version asked: %d, Flytrap-Version %q", res.StatusCode, current)
	}
	if res := do(current); res.StatusCode != http.StatusOK || res.Header.Get("Flytrap-Version") != current {
		t.Fatalf("current version asked: %d", res.StatusCode)
	}
	for _, bad := range []string{"2001-01-01", "latest", "2026-13-45"} {
		if res := do(bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("Flytrap-Version %q: %d, want 400", bad, res.StatusCode)
		}
	}
}
