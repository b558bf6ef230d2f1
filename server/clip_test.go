package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestEchoedTextCutOnACharacter: the three messages that repeat a caller's text cut it
// on a character boundary (internal/clip). Each text here puts a two-byte "é" across the
// byte bound, where the helpers they used before cut inside it.
func TestEchoedTextCutOnACharacter(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	restMessage := func(res *http.Response, body []byte) string {
		t.Helper()
		var out struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("%d %s: %v", res.StatusCode, body, err)
		}
		return out.Error
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want || !utf8.ValidString(got) || strings.ContainsRune(got, utf8.RuneError) {
			t.Errorf("%s:\n got  %q\n want %q", what, got, want)
		}
	}

	// graph: an id is repeated up to 64 bytes.
	id := strings.Repeat("a", 63) + "éé"
	r := env.GraphQL(a.ReadOnly, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id})
	if len(r.Errors) == 0 {
		t.Fatalf("node(%q) accepted: %s", id, r.Raw)
	}
	check("node(id)", r.Errors[0].Message, fmt.Sprintf("id: %q is not a Flytrap id", strings.Repeat("a", 63)+"…"))

	// server: an unknown API route's path is repeated up to 200 bytes.
	path := "/api/" + strings.Repeat("a", 194) + "éé"
	res, body := env.Get(a.ReadOnly, path)
	if res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, body)
	}
	check("unknown route", restMessage(res, body), "no such route: GET /api/"+strings.Repeat("a", 194)+"…")

	// server: a Flytrap-Version header is repeated up to 40 bytes.
	version := strings.Repeat("a", 39) + "éé"
	req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
	req.Header.Set("Flytrap-Version", version)
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != http.StatusBadRequest {
		t.Fatalf("Flytrap-Version %q: %d %v", version, res.StatusCode, err)
	}
	msg, _, _ := strings.Cut(out.Error, " (supported")
	check("Flytrap-Version", msg, fmt.Sprintf("Flytrap-Version %q is not a version of this API", strings.Repeat("a", 39)+"…"))
}
