package trap_test

// The counters the figures are read from (tally) equal a from-scratch recount of the raw
// rows after a random mix of visitors — pages, followed callbacks that escalate sessions,
// unknown paths — written by the real writer, then after sessions are deleted and changed
// outside it; on PostgreSQL also with two instances writing to one database at once.

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/signal"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
	counters "github.com/flytrap/flytrap/tally"
)

var counterUAs = []string{
	"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (compatible; GPTBot/1.2; +https://openai.com/gptbot)",
	"curl/8.5.0",
	"python-requests/2.32.3",
	"Claude-User/1.0",
	"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
}

// visitMix sends n requests from goroutines workers to the trap listeners (several
// instances: a visitor picks one at random each time, so a token served by one instance
// comes back to another): trap pages, the callbacks found in them, unknown paths.
func visitMix(t *testing.T, trapURLs []string, key func(int) []byte, paths []string, n, workers int, seed uint64) {
	t.Helper()
	client := trapClient(workers)
	type visitor struct {
		ua, ip    string
		callbacks []string
	}
	var mu sync.Mutex
	visitors := make([]*visitor, 24)
	for i := range visitors {
		visitors[i] = &visitor{ua: counterUAs[i%len(counterUAs)], ip: fmt.Sprintf("198.18.1.%d", i+1)}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(seed, uint64(w)))
			for range n / workers {
				v := visitors[rnd.IntN(len(visitors))]
				inst := rnd.IntN(len(trapURLs))
				mu.Lock()
				cbs := v.callbacks
				mu.Unlock()
				var u string
				switch x := rnd.IntN(10); {
				case x < 5:
					u = paths[rnd.IntN(len(paths))]
				case x < 8 && len(cbs) > 0:
					u = cbs[rnd.IntN(len(cbs))]
				default:
					u = fmt.Sprintf("/missing/%d", rnd.IntN(5))
				}
				status, _, body, err := fetch(client, trapURLs[inst]+u, v.ua, v.ip)
				if err != nil || (status != http.StatusOK && status != http.StatusNotFound) {
					t.Errorf("GET %s: %d %v", u, status, err)
					return
				}
				for _, found := range regexURLs(body) {
					if refs := decoy.FindTokens(key(inst), found); len(refs) == 1 && refs[0].Purpose == decoy.Callback {
						mu.Lock()
						v.callbacks = append(v.callbacks, found)
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
}

// checkCounters fails unless the stored counters equal a recount of the raw rows.
func checkCounters(t *testing.T, c *ent.Client) *counters.Delta {
	t.Helper()
	stored, err := counters.Stored(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	recount, err := counters.Recount(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Equal(recount) {
		t.Fatalf("stored counters vs a recount:\n%s", stored.Diff(recount))
	}
	if stored.Empty() {
		t.Fatal("no counter was written")
	}
	if err := store.CheckTrapSessions(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	return stored
}

func TestCountersEqualRecount(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, trustLocalProxy)
		var paths []string
		for _, name := range []string{"acme"} { // one organization: the listener routes by verified host
			tn := env.Tenant(name)
			for i, typ := range []string{"page", "page"} {
				p := fmt.Sprintf("/%s/docs/%d", name, i)
				env.MustGraphQL(tn.ReadWrite, `mutation($p: String!, $t: TrapType!) { createTrap(input:{name:"t", type: $t, path: $p}) { id } }`,
					map[string]any{"p": p, "t": typ})
				paths = append(paths, p)
			}
		}
		key := func(int) []byte { return env.Server.Engine().Key() }
		visitMix(t, []string{env.Trap.URL}, key, paths, 600, 8, 1)
		ctx := ft.System()
		c := env.DB.Client
		if n := c.Session.Query().Where(session.SeverityNEQ(session.SeverityLow)).CountX(ctx); n == 0 {
			t.Fatal("no session rose above low: the mix escalates nothing")
		}
		before := checkCounters(t, c)

		// A change made outside the writer (through record) moves the session's count;
		// deletions (in a transaction, and one without) take sessions out of every counter,
		// but not their hits out of the hourly buckets.
		ss := c.Session.Query().Order(ent.Asc(session.FieldID)).AllX(ctx)
		if err := record.UpdateSession(ctx, c.Session.UpdateOneID(ss[0].ID).SetSeverity(session.SeverityCritical).
			SetClassification(session.ClassificationAI_AGENT).AddTripwiresFired(2)); err != nil {
			t.Fatal(err)
		}
		tx, err := c.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		gone := []string{ss[1].ID, ss[2].ID, ss[3].ID}
		tx.Signal.Delete().Where(signal.SessionIDIn(gone...)).ExecX(ctx)
		tx.Prompt.Delete().Where(prompt.SessionIDIn(gone...)).ExecX(ctx)
		tx.Hit.Delete().Where(hit.SessionIDIn(gone...)).ExecX(ctx)
		if _, err := record.DeleteSessions(ctx, tx.Client(), session.IDIn(gone...)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		one := ss[len(ss)-1].ID
		c.Signal.Delete().Where(signal.SessionID(one)).ExecX(ctx)
		c.Prompt.Delete().Where(prompt.SessionID(one)).ExecX(ctx)
		c.Hit.Delete().Where(hit.SessionID(one)).ExecX(ctx)
		if _, err := record.DeleteSessions(ctx, c, session.ID(one)); err != nil {
			t.Fatal(err)
		}
		// A rolled-back change changes no counter.
		tx, err = c.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := record.UpdateSession(ctx, tx.Session.UpdateOneID(ss[4].ID).SetSeverity(session.SeverityHigh).AddPromptsCaptured(3)); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()

		stored, err := counters.Stored(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		recount, err := counters.Recount(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		if !stored.SessionsEqual(recount) {
			t.Fatalf("session counters after changes and deletions vs a recount:\n%s", stored.Diff(recount))
		}
		if !stored.HoursEqual(before) {
			t.Fatalf("deleting hits changed the hourly buckets:\n%s", stored.Diff(before))
		}
	})
}

// Two instances on one PostgreSQL database write hits of the same visitors at once (a
// token one served comes back to the other, so both change the same sessions): the
// counters still equal a recount.
func TestCountersTwoInstances(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	a := ft.StartOn(t, dsn, trustLocalProxy)
	b := ft.StartOn(t, dsn, trustLocalProxy)
	tn := a.Tenant("acme")
	paths := []string{"/acme/docs/0", "/acme/docs/1"}
	for _, p := range paths {
		a.MustGraphQL(tn.ReadWrite, `mutation($p: String!) { createTrap(input:{name:"t", type: page, path: $p}) { id } }`, map[string]any{"p": p})
	}
	// B learns of the traps through the database's notifications.
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range paths {
		for {
			status, _, _, err := fetch(trapClient(1), b.Trap.URL+p, "probe", "198.18.9.9")
			if err == nil && status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("instance B never served %s: %d %v", p, status, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	envs := []*ft.Env{a, b}
	key := func(i int) []byte { return envs[i].Server.Engine().Key() }
	visitMix(t, []string{a.Trap.URL, b.Trap.URL}, key, paths, 800, 8, 2)
	checkCounters(t, a.DB.Client)
}
