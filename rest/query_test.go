package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestUndecodableQueryIs400 sends query strings that do not decode to REST routes
// through the real router: each is a 400 in the document's error shape naming what is
// wrong, never a parameter silently read as absent (a stream that opens, a list from the start).
func TestUndecodableQueryIs400(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	trapID := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "q", "type": "api", "path": "/q"})["id"].(string)

	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/dashboard/api/sessions", ""},
		{http.MethodGet, "/api/v1/events", ""},
		{http.MethodGet, "/api/v1/events/stream", ""},
		{http.MethodGet, "/dashboard/api/traps", ""},
		{http.MethodGet, "/dashboard/api/webhooks", ""},
		{http.MethodPost, "/dashboard/api/traps", `{"name": "n", "type": "api", "path": "/created-with-bad-query"}`},
		{http.MethodPatch, "/dashboard/api/traps/" + trapID, `{"name": "renamed"}`},
		{http.MethodGet, "/api/openapi.json", ""},
	}
	bad := []struct{ query, names string }{
		{"cursor=%%%", "cursor"},
		{"limit=%zz", "limit"},
		{"limit=10&cursor=abc%", "cursor"},
		{"%zz=1", "query string"},
		{"limit=1;cursor=x", "query string"},
	}
	for _, rt := range routes {
		for _, b := range bad {
			r := sendRaw(t, env, a.ReadWrite, rt.method, rt.path+"?"+b.query, rt.body)
			wantError(t, r, []int{http.StatusBadRequest}, b.names, "URL")
		}
	}
	// The caller's text an error repeats is bounded: a long name, undecodable or unknown.
	long := strings.Repeat("n", 10000)
	for _, q := range []string{long + "=%zz", long + "=1", "type=" + long} {
		r := sendRaw(t, env, a.ReadOnly, http.MethodGet, "/api/v1/events?"+q, "")
		wantError(t, r, []int{http.StatusBadRequest})
		if msg, _ := r.obj()["error"].(string); len(msg) > 300 {
			t.Errorf("%s: error of %d bytes repeats the caller's text unbounded", clipText(q, 20), len(msg))
		}
	}
	// Nothing was changed by the refused writes.
	r := mustOK(t, restCall(t, env, a.ReadOnly, http.MethodGet, "/dashboard/api/traps", nil), http.StatusOK)
	if traps, _ := r.data().([]any); len(traps) != 1 || strings.Contains(string(r.Raw), "renamed") {
		t.Errorf("a refused request changed the traps: %s", r.Raw)
	}
}

// sendRaw sends the path as it is (no re-encoding) and reads the answer; a stream
// that opens is not read to its end but reported with the status it opened with.
func sendRaw(t *testing.T, env *ft.Env, token, method, path, body string) apiReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, env.HTTP.URL+path, rd)
	if err != nil {
		t.Fatalf("new request %s %s: %v", method, path, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out := apiReply{What: method + " " + path, Status: res.StatusCode, Header: res.Header}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		return out
	}
	out.Raw, _ = io.ReadAll(res.Body)
	out.Body = decodeReply(out.Raw)
	return out
}

// decodeReply decodes a JSON body with json.Number, as restCall does (nil if it is not JSON).
func decodeReply(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}
