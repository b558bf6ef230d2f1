package rest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

type eventList struct {
	Events []struct {
		ID         string         `json:"id"`
		Type       string         `json:"type"`
		APIVersion string         `json:"api_version"`
		CreatedAt  string         `json:"created_at"`
		Data       map[string]any `json:"data"`
	} `json:"events"`
	HasMore    bool   `json:"has_more"`
	NextCursor string `json:"next_cursor"`
}

func listEvents(t *testing.T, env *ft.Env, key string, q url.Values) eventList {
	t.Helper()
	res, body := env.Get(key, "/api/v1/events?"+q.Encode())
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/events?%s: %d %s", q.Encode(), res.StatusCode, body)
	}
	var l eventList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestEventsNoGapUnderConcurrentWriters tails the list with next_cursor while
// several writers create traps at once: every event arrives exactly once.
func TestEventsNoGapUnderConcurrentWriters(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		const writers, each = 4, 15
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					env.MustGraphQL(a.ReadWrite, fmt.Sprintf(`mutation { createTrap(input:{name:"w%d-%d", type: api}) { id } }`, w, i), nil)
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()

		seen := map[string]bool{}
		cursor := ""
		for finished := false; ; {
			select {
			case <-done:
				finished = true
			default:
			}
			q := url.Values{"limit": {"7"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			l := listEvents(t, env, a.ReadOnly, q)
			for _, ev := range l.Events {
				if seen[ev.ID] {
					t.Fatalf("event %s delivered twice", ev.ID)
				}
				seen[ev.ID] = true
			}
			if l.NextCursor == "" {
				t.Fatal("next_cursor missing")
			}
			cursor = l.NextCursor
			if finished && !l.HasMore && len(l.Events) == 0 {
				break
			}
		}
		if len(seen) != writers*each {
			t.Fatalf("tailing saw %d events, %d were written", len(seen), writers*each)
		}
		// A fresh read of the whole log agrees.
		all := map[string]bool{}
		for cursor, more := "", true; more; {
			q := url.Values{"limit": {"100"}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			l := listEvents(t, env, a.ReadOnly, q)
			for _, ev := range l.Events {
				all[ev.ID] = true
			}
			cursor, more = l.NextCursor, l.HasMore
		}
		if len(all) != len(seen) {
			t.Fatalf("full read %d events, tail %d", len(all), len(seen))
		}
	})
}

func TestEventsListParameters(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0])
	a := env.Tenant("acme")
	id := env.CreateTrap(a.ReadWrite, "x", "api")
	env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: false}) { id } }`, map[string]any{"id": id})
	env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { deleteTrap(id: $id) { id } }`, map[string]any{"id": id})

	l := listEvents(t, env, a.ReadOnly, url.Values{})
	if len(l.Events) != 3 || l.HasMore {
		t.Fatalf("got %d events (has_more %v), want 3", len(l.Events), l.HasMore)
	}
	for i, want := range []string{"trap.created", "trap.updated", "trap.deleted"} {
		if l.Events[i].Type != want {
			t.Fatalf("event %d is %s, want %s (oldest first)", i, l.Events[i].Type, want)
		}
	}
	// Polling later with next_cursor returns only newer events.
	if later := listEvents(t, env, a.ReadOnly, url.Values{"cursor": {l.NextCursor}}); len(later.Events) != 0 || later.NextCursor != l.NextCursor {
		t.Fatalf("poll at the end: %d events, cursor %q", len(later.Events), later.NextCursor)
	}
	id2 := env.CreateTrap(a.ReadWrite, "y", "api")
	later := listEvents(t, env, a.ReadOnly, url.Values{"cursor": {l.NextCursor}})
	if len(later.Events) != 1 || later.Events[0].Data["id"] != id2 {
		t.Fatalf("poll after a new trap: %+v", later)
	}
	// Type filter: one or several, comma-separated.
	if got := listEvents(t, env, a.ReadOnly, url.Values{"type": {"trap.updated,trap.deleted"}}); len(got.Events) != 2 {
		t.Fatalf("type filter: %d events, want 2", len(got.Events))
	}
	// limit pages with has_more.
	p1 := listEvents(t, env, a.ReadOnly, url.Values{"limit": {"2"}})
	p2 := listEvents(t, env, a.ReadOnly, url.Values{"limit": {"2"}, "cursor": {p1.NextCursor}})
	if len(p1.Events) != 2 || !p1.HasMore || len(p2.Events) != 2 || p2.HasMore || p1.Events[1].ID == p2.Events[0].ID {
		t.Fatalf("paging: %+v then %+v", p1, p2)
	}
	for _, bad := range []string{"limit=0", "limit=101", "limit=x", "cursor=zz", "type=nope", "type=", "since=1"} {
		res, body := env.Get(a.ReadOnly, "/api/v1/events?"+bad)
		if bad == "type=" {
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s: %d", bad, res.StatusCode)
			}
			continue
		}
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", bad, res.StatusCode, body)
		}
	}
	// Another organization sees none of these.
	if got := listEvents(t, env, env.Tenant("other").ReadOnly, url.Values{}); len(got.Events) != 0 {
		t.Fatalf("other organization sees %d events", len(got.Events))
	}
}
