package server_test

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// twoInstances starts two servers on one new PostgreSQL database. Their broker poll is
// slowed to a minute, so only LISTEN/NOTIFY can deliver quickly across them.
func twoInstances(t *testing.T) (a, b *ft.Env) {
	t.Helper()
	dsn := ft.PostgresDSN(t)
	slowPoll := func(c *server.Config) { c.EventPollInterval = time.Minute }
	return ft.StartOn(t, dsn, slowPoll), ft.StartOn(t, dsn, slowPoll)
}

func TestInstancesShareLiveDelivery(t *testing.T) {
	envA, envB := twoInstances(t)
	tn := envA.Tenant("acme")

	// An event caused on A reaches a subscription and an SSE stream on B.
	c := subscribeWS(t, envB, tn.ReadOnly, eventsSub, nil)
	waitSubscribers(t, envB, 1)
	sse := openSSE(t, envB, tn.ReadOnly)
	waitSubscribers(t, envB, 2)
	start := time.Now()
	d := envA.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"from A", type: api}) { id } }`, nil)
	id := ft.Dig(d, "createTrap", "id")
	if got := ft.Dig(nextData(t, c), "events", "data", "id"); got != id {
		t.Fatalf("subscription on B got %v, want %v", got, id)
	}
	if got := nextSSE(t, sse); !strings.Contains(got, id.(string)) {
		t.Fatalf("stream on B got %s, want %v", got, id)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Fatalf("delivery across instances took %v: the notification did not wake B", elapsed)
	}

	// A trap created on A is served by B's trap listener.
	envA.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"page", type: page, path:"/shared"}) { id } }`, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := http.Get(envB.Trap.URL + "/shared")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still answers %d for a trap created on A", res.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRevocationReachesEveryInstance(t *testing.T) {
	envA, envB := twoInstances(t)
	tn := envA.Tenant("acme")
	key := envA.Key(tn.Org.ID, "READ_ONLY")
	c := subscribeWS(t, envB, key, eventsSub, nil)
	waitSubscribers(t, envB, 1)

	keys := envA.MustGraphQL(tn.Admin, `{ apiKeys(first: 100) { edges { node { id prefix } } } }`, nil)
	for _, e := range ft.Dig(keys, "apiKeys", "edges").([]any) {
		if strings.HasPrefix(key, ft.Dig(e, "node", "prefix").(string)) {
			envA.MustGraphQL(tn.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, map[string]any{"id": ft.Dig(e, "node", "id")})
		}
	}
	// B refuses the key on its very next request…
	if r := envB.GraphQL(key, `{ organization { id } }`, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("B answered a revoked key with %d", r.Status)
	}
	// …and its open subscription ends within a second.
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	readUntil(t, c, "complete")
}

// TestListenerReconnectLosesNothing cuts B's LISTEN connection: events written while it
// is away still reach B's subscribers once it is back.
func TestListenerReconnectLosesNothing(t *testing.T) {
	envA, envB := twoInstances(t)
	tn := envA.Tenant("acme")
	c := subscribeWS(t, envB, tn.ReadOnly, eventsSub, nil)
	waitSubscribers(t, envB, 1)

	admin, err := sql.Open("postgres", strings.Split(envB.DB.DSN, "?")[0]+"?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	res, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatal("found no LISTEN connection to cut")
	}
	var want []any
	for range 3 {
		d := envA.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"while away", type: api}) { id } }`, nil)
		want = append(want, ft.Dig(d, "createTrap", "id"))
	}
	for _, id := range want {
		if got := ft.Dig(nextData(t, c), "events", "data", "id"); got != id {
			t.Fatalf("after the reconnect B delivered %v, want %v", got, id)
		}
	}
}
