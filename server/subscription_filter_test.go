package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// The events subscription takes type prefixes (trap.*) as webhook endpoints do, and since
// replays the events created from then on; a deploy key is refused.
func TestEventsSubscriptionPrefixAndSince(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		id1 := env.CreateTrap(a.ReadWrite, "before", "api")
		const sub = `subscription($types: [String!], $since: Time) { events(types: $types, since: $since) { type data } }`
		// since in the past replays the earlier event first, then follows live.
		c := subscribeWS(t, env, a.ReadOnly, sub, map[string]any{"types": []string{"trap.*"}, "since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
		if got := ft.Dig(nextData(t, c), "events", "data", "id"); got != id1 {
			t.Fatalf("since replayed %v, want %s", got, id1)
		}
		id2 := env.CreateTrap(a.ReadWrite, "live", "api")
		if d := nextData(t, c); ft.Dig(d, "events", "data", "id") != id2 || ft.Dig(d, "events", "type") != "trap.created" {
			t.Fatalf("live event %v, want trap.created of %s", d, id2)
		}
		c.Close()
		waitSubscribers(t, env, 0)
		// since in the future: nothing replayed, the next event is live.
		c2 := subscribeWS(t, env, a.ReadOnly, sub, map[string]any{"types": []string{"trap.created"}, "since": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
		waitSubscribers(t, env, 1)
		id3 := env.CreateTrap(a.ReadWrite, "after", "api")
		if got := ft.Dig(nextData(t, c2), "events", "data", "id"); got != id3 {
			t.Fatalf("a future since gave %v, want the live %s", got, id3)
		}
		c2.Close()

		for _, types := range [][]string{{"nothing.*"}, {"trap"}} {
			c := subscribeWS(t, env, a.ReadOnly, sub, map[string]any{"types": types})
			m := readUntil(t, c, "next")
			if !strings.Contains(fmt.Sprint(m.Payload["errors"]), "BAD_USER_INPUT") {
				t.Fatalf("types %v: %v", types, m)
			}
			c.Close()
		}
		// A deploy key reads no events.
		d := env.MustGraphQL(a.Admin, `mutation($site: ID) { createApiKey(input: {name: "deploy", scope: READ_WRITE, siteID: $site}) { key } }`,
			map[string]any{"site": a.Site.ID})
		c3 := subscribeWS(t, env, ft.Dig(d, "createApiKey", "key").(string), sub, nil)
		m := readUntil(t, c3, "next")
		if !strings.Contains(fmt.Sprint(m.Payload["errors"]), "FORBIDDEN") || !strings.Contains(fmt.Sprint(m.Payload["errors"]), "deploy key") {
			t.Fatalf("a deploy key's subscription: %v", m)
		}
	})
}
