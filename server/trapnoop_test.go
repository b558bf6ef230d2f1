package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// A PATCH (REST) or updateTrap (GraphQL) that changes nothing writes no trap.updated event;
// one that changes something writes one.
func TestNoOpTrapUpdateWritesNoEvent(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		id := env.CreateTrap(a.ReadWrite, "Pricing", "page")
		patch := func(body string) {
			req, _ := http.NewRequest(http.MethodPatch, env.HTTP.URL+"/dashboard/api/traps/"+id, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+a.ReadWrite)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("PATCH %s: %d", body, res.StatusCode)
			}
		}
		updates := func() int {
			_, raw := env.Get(a.ReadOnly, "/api/v1/events?type=trap.updated&limit=100")
			var page struct {
				Events []any `json:"events"`
			}
			if err := json.Unmarshal(raw, &page); err != nil {
				t.Fatalf("events: %v %s", err, raw)
			}
			return len(page.Events)
		}
		patch(`{"name":"Pricing"}`)
		patch(`{"active":true,"description":""}`)
		env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {name: "Pricing"}) { id } }`, map[string]any{"id": id})
		if n := updates(); n != 0 {
			t.Fatalf("%d trap.updated events after updates that changed nothing", n)
		}
		patch(`{"name":"Pricing (EU)"}`)
		if n := updates(); n != 1 {
			t.Fatalf("%d trap.updated events after a rename, want 1", n)
		}
	})
}
