package rest_test

import (
	"net/http"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// public_title is an addition to the document's trap: taken on create and update, returned
// on every trap, empty when the generated title is in use; a title that would not stay on
// one line is a 400 naming the field, and the decoy shows the title, never the name.
func TestRESTTrapPublicTitle(t *testing.T) {
	t.Parallel()
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		plain := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "Secret ops notes", "type": "page", "path": "/kb/ops"})
		if plain["public_title"] != "" {
			t.Errorf("public_title without one set: %v", plain["public_title"])
		}
		titled := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "Secret ops notes 2", "type": "page", "path": "/kb/ops2",
			"public_title": "Operations handbook"})
		if titled["public_title"] != "Operations handbook" {
			t.Errorf("public_title on create: %v", titled["public_title"])
		}
		id := plain["id"].(string)
		r := mustOK(t, restCall(t, env, a.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+id, `{"public_title":"Team wiki"}`), http.StatusOK)
		if d := r.data().(map[string]any); d["public_title"] != "Team wiki" || d["name"] != "Secret ops notes" {
			t.Errorf("PATCH public_title: %v", d)
		}
		for _, body := range []string{`{"public_title":"two\nlines"}`, `{"public_title":"` + strings.Repeat("x", 121) + `"}`, `{"public_title":5}`} {
			r := restCall(t, env, a.ReadWrite, http.MethodPatch, "/dashboard/api/traps/"+id, body)
			wantError(t, r, []int{http.StatusBadRequest})
			if msg, _ := r.obj()["error"].(string); !strings.Contains(msg, "public_title") {
				t.Errorf("PATCH %s: error %q does not name public_title", body, msg)
			}
		}
		r = restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/traps", map[string]any{"name": "x", "type": "page", "public_title": "a\u0000b"})
		wantError(t, r, []int{http.StatusBadRequest})

		res, err := http.Get(env.Trap.URL + "/kb/ops")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var page strings.Builder
		buf := make([]byte, 1<<16)
		for {
			n, err := res.Body.Read(buf)
			page.Write(buf[:n])
			if err != nil {
				break
			}
		}
		if !strings.Contains(page.String(), "<h1>Team wiki</h1>") || strings.Contains(page.String(), "Secret ops") {
			t.Errorf("the decoy does not show its public title alone:\n%.2000s", page.String())
		}
	})
}
