package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// TestWireKeysSorted: every REST answer is byte for byte what encoding a map gives (keys
// sorted), as the map literals the typed wire shapes replaced wrote.
func TestWireKeysSorted(t *testing.T) {
	t.Parallel()
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	tr := restNewTrap(t, env, a.ReadWrite, map[string]any{"name": "T", "type": "api", "path": "/t"})["id"].(string)
	now := time.Now().UTC()
	s := seedSessions(t, env, a.Org.ID, []sessionSpec{{Class: "BOT", Severity: "low", IP: "203.0.113.9", First: now, Last: now, HitCount: 1}})[0]
	seedHits(t, env, []hitSpec{{Session: s, TrapID: tr, Method: "GET", Path: "/t", At: now, Headers: map[string][]string{"A": {"<b>"}}}})
	ep := restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks", map[string]any{"url": "https://example.com/h"})
	id := ft.Dig(ep.plain(t), "data", "id").(string)
	replies := []apiReply{ep,
		restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/"+id+"/ping", nil),
		restCall(t, env, a.ReadWrite, http.MethodPost, "/dashboard/api/webhooks/"+id+"/rotate-secret", nil),
	}
	for _, path := range []string{"/dashboard/api/traps", "/dashboard/api/sessions", "/dashboard/api/sessions/" + s.ID,
		"/dashboard/api/analytics/timeline", "/dashboard/api/webhooks", "/dashboard/api/webhooks/" + id + "/deliveries",
		"/api/v1/events", "/dashboard/api/sessions/nope"} {
		replies = append(replies, restCall(t, env, a.ReadOnly, http.MethodGet, path, nil))
	}
	replies = append(replies, restCall(t, env, a.ReadWrite, http.MethodDelete, "/dashboard/api/traps/"+tr, nil))
	for _, r := range replies {
		var v any
		dec := json.NewDecoder(bytes.NewReader(r.Raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", r.What, err)
		}
		var again bytes.Buffer
		if err := json.NewEncoder(&again).Encode(v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), r.Raw) {
			t.Errorf("%s: answer is not map-ordered JSON:\n got %s\nwant %s", r.What, r.Raw, again.Bytes())
		}
	}
}
