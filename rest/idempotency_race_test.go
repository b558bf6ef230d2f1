package rest_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/flytrap/flytrap/app"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestIdempotencyKeyRace: concurrent creates with one key make one trap; every answer is
// a 201 (the trap) or a 409, never a 500; distinct keys at once each make theirs.
func TestIdempotencyKeyRace(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		var wg sync.WaitGroup
		codes := make([]int, 16)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, path := "same", "/race"
				if i%2 == 1 {
					key, path = fmt.Sprint("k", i), fmt.Sprint("/race-", i)
				}
				codes[i] = restCall(t, env, a.ReadWrite, "POST", "/dashboard/api/traps", map[string]any{"name": "r", "type": "page", "path": path}, "Idempotency-Key", key).Status
			}()
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusCreated && !(i%2 == 0 && c == http.StatusConflict) {
				t.Errorf("request %d: status %d", i, c)
			}
		}
		n, err := env.DB.Client.Trap.Query().Count(ft.System())
		if err != nil || n != 9 {
			t.Errorf("%d traps (%v), want 9", n, err)
		}
	})
}

// TestIdempotencyKeyPerOrganization: one key and one body in two organizations make two
// traps; neither is answered the other's.
func TestIdempotencyKeyPerOrganization(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		body := map[string]any{"name": "same", "type": "page", "path": "/same"}
		var seen []string
		for _, org := range []string{"acme", "globex"} {
			ten := env.Tenant(org)
			r := restCall(t, env, ten.ReadWrite, "POST", "/dashboard/api/traps", body, "Idempotency-Key", "shared-key")
			mustOK(t, r, http.StatusCreated)
			d := r.data().(map[string]any)
			if r.Header.Get("Idempotent-Replayed") != "false" || d["org_id"] != ten.Org.ID {
				t.Fatalf("%s: replayed %q, org %v: %s", org, r.Header.Get("Idempotent-Replayed"), d["org_id"], r.Raw)
			}
			seen = append(seen, d["id"].(string))
		}
		if seen[0] == seen[1] {
			t.Fatalf("both organizations got trap %s", seen[0])
		}
	})
}

// An organization holds at most app.MaxIdempotencyKeys keys a window: past it a keyed create
// is a 429 with Retry-After (nothing created), a replay of a held key and a create without a
// key still work, and another organization is not affected.
func TestIdempotencyKeysBounded(t *testing.T) {
	old := app.MaxIdempotencyKeys
	app.MaxIdempotencyKeys = 3
	t.Cleanup(func() { app.MaxIdempotencyKeys = old })
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		acme := env.Tenant("acme")
		trap := func(i int) map[string]any {
			return map[string]any{"name": "t", "type": "page", "path": fmt.Sprintf("/bounded/%d", i)}
		}
		for i := range 3 {
			mustOK(t, restCall(t, env, acme.ReadWrite, "POST", "/dashboard/api/traps", trap(i), "Idempotency-Key", fmt.Sprintf("k%d", i)), http.StatusCreated)
		}
		r := restCall(t, env, acme.ReadWrite, "POST", "/dashboard/api/traps", trap(3), "Idempotency-Key", "k3")
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Fatalf("the 4th key: %d %s", r.Status, r.Raw)
		}
		if r := restCall(t, env, acme.ReadWrite, "POST", "/dashboard/api/traps", trap(0), "Idempotency-Key", "k0"); r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("a held key's replay: %d %s", r.Status, r.Raw)
		}
		mustOK(t, restCall(t, env, acme.ReadWrite, "POST", "/dashboard/api/traps", trap(3)), http.StatusCreated)
		mustOK(t, restCall(t, env, env.Tenant("globex").ReadWrite, "POST", "/dashboard/api/traps", trap(0), "Idempotency-Key", "k0"), http.StatusCreated)
	})
}
