package server_test

// API scenarios through the real router over HTTP, on every backend: helpers,
// authentication, scopes, API keys, traps and their events, pagination,
// analytics and the operational endpoints. Tenant isolation lives in
// isolation_test.go, bad input in badinput_test.go.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/apikey"
	"github.com/flytrap/flytrap/ent"
	entkey "github.com/flytrap/flytrap/ent/apikey"
	"github.com/flytrap/flytrap/ent/session"
	entsite "github.com/flytrap/flytrap/ent/site"
	enttrap "github.com/flytrap/flytrap/ent/trap"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/viewer"
)

// ---- known bugs ---------------------------------------------------------------

// knownBug skips t while bug is set, unless FLYTRAP_TEST_KNOWN_BUGS is set, which runs
// the test anyway to show the failure (or that a fix works).
func knownBug(t *testing.T, bug string) {
	t.Helper()
	if bug != "" && os.Getenv("FLYTRAP_TEST_KNOWN_BUGS") == "" {
		t.Skip("BUG: " + bug)
	}
}

// ---- helpers ----------------------------------------------------------------

var (
	apiVersionRE  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	eventTimeRE   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)
	generatedIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	trapIDRE      = regexp.MustCompile(`^trp_[0-9a-z]{26}$`)
)

// wantCode fails t unless r is an error response whose first error has code want.
// Whatever the code, it must never be INTERNAL nor an HTTP 5xx.
func wantCode(t *testing.T, r ft.Response, want string) {
	t.Helper()
	if r.Status >= 500 {
		t.Fatalf("HTTP %d, want no 5xx: %s", r.Status, r.Raw)
	}
	if len(r.Errors) == 0 {
		t.Fatalf("no error, want %s: %s", want, r.Raw)
	}
	for _, e := range r.Errors {
		if c, _ := e.Extensions["code"].(string); c == server.CodeInternal {
			t.Fatalf("an error is INTERNAL: %s", r.Raw)
		}
	}
	if got := r.Code(); got != want {
		t.Fatalf("extensions.code = %q, want %q: %s", got, want, r.Raw)
	}
}

// wantOK fails t unless r succeeded without errors.
func wantOK(t *testing.T, r ft.Response) {
	t.Helper()
	if r.Status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("GraphQL %d: %s", r.Status, r.Raw)
	}
}

// str is a string from a decoded JSON value ("" if it is not one).
func str(v any) string { s, _ := v.(string); return s }

// num is an int from a decoded JSON number (-1 if it is not one).
func num(v any) int {
	f, ok := v.(float64)
	if !ok {
		return -1
	}
	return int(f)
}

// nodes returns the nodes of a connection's edges.
func nodes(conn any) []map[string]any {
	var out []map[string]any
	edges, _ := ft.Dig(conn, "edges").([]any)
	for _, e := range edges {
		n, _ := ft.Dig(e, "node").(map[string]any)
		out = append(out, n)
	}
	return out
}

// nodeIDs returns the ids of a connection's nodes.
func nodeIDs(conn any) []string {
	var out []string
	for _, n := range nodes(conn) {
		out = append(out, str(n["id"]))
	}
	return out
}

// rawRequest sends a request to the API with the given headers and returns the response and body.
func rawRequest(t *testing.T, env *ft.Env, method, path string, hdr map[string]string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, env.HTTP.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return res, b
}

// gqlBody is a JSON GraphQL request body.
func gqlBody(query string, vars map[string]any) io.Reader {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return bytes.NewReader(b)
}

// createTrap creates a trap through GraphQL and returns it with every field.
func createTrap(t *testing.T, env *ft.Env, token string, input map[string]any) map[string]any {
	t.Helper()
	d := env.MustGraphQL(token, `mutation($in: CreateTrapInput!) { createTrap(input: $in) { `+trapFields+` } }`,
		map[string]any{"in": input})
	return ft.Dig(d, "createTrap").(map[string]any)
}

const trapFields = `id orgID siteID name path type description active createdAt updatedAt site { id name }`

// createTraps creates n page traps in one GraphQL document (aliases) and returns their ids in order.
func createTraps(t *testing.T, env *ft.Env, token string, n int, name, path func(i int) string) []string {
	t.Helper()
	var b strings.Builder
	b.WriteString("mutation {")
	for i := range n {
		fmt.Fprintf(&b, " t%d: createTrap(input: {name: %q, type: page, path: %q}) { id }", i, name(i), path(i))
	}
	b.WriteString(" }")
	d := env.MustGraphQL(token, b.String(), nil)
	out := make([]string, n)
	for i := range n {
		out[i] = str(ft.Dig(d, fmt.Sprintf("t%d", i), "id"))
	}
	return out
}

// seedSession writes a session of org past the tenant policy, as the detection engine would.
func seedSession(t *testing.T, env *ft.Env, org string, set func(*ent.SessionCreate)) *ent.Session {
	t.Helper()
	c := env.DB.Client.Session.Create().SetOrgID(org).SetSourceIP("203.0.113.7").SetUserAgent("test-agent/1.0")
	if set != nil {
		set(c)
	}
	s, err := record.CreateSessions(ft.System(), env.DB.Client, c)
	if err != nil {
		t.Fatalf("seed session: %v", err)
	}
	return s[0]
}

// seedHits writes one hit of session s per time in at, attributed to trapID when it is set.
func seedHits(t *testing.T, env *ft.Env, s *ent.Session, trapID string, at ...time.Time) []*ent.Hit {
	t.Helper()
	bulk := make([]*ent.HitCreate, len(at))
	for i, ts := range at {
		c := env.DB.Client.Hit.Create().SetOrgID(s.OrgID).SetSessionID(s.ID).
			SetMethod("GET").SetPath("/decoy").SetSourceIP(s.SourceIP).SetUserAgent(s.UserAgent).
			SetHeaders(map[string][]string{"Accept": {"*/*"}}).
			SetReceivedAt(ts.UTC()).SetReceivedHour(ts.Unix() / 3600)
		if trapID != "" {
			c.SetTrapID(trapID)
		}
		bulk[i] = c
	}
	hits, err := record.CreateHits(ft.System(), env.DB.Client, bulk...)
	if err != nil {
		t.Fatalf("seed hits: %v", err)
	}
	return hits
}

// sameJSON reports whether x and y encode to the same JSON.
func sameJSON(x, y any) bool {
	bx, errx := json.Marshal(x)
	by, erry := json.Marshal(y)
	return errx == nil && erry == nil && bytes.Equal(bx, by)
}

// keyID returns the id of the stored key whose plaintext is key.
func keyID(t *testing.T, env *ft.Env, key string) string {
	t.Helper()
	k, err := env.DB.Client.APIKey.Query().Where(entkey.Hash(apikey.Hash(key))).Only(ft.System())
	if err != nil {
		t.Fatalf("look up key: %v", err)
	}
	return k.ID
}

// ---- authentication ---------------------------------------------------------

func TestAuthentication(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")

		unknown, err := apikey.Generate()
		if err != nil {
			t.Fatal(err)
		}
		// Change the last checksum character: same shape, wrong checksum.
		badSum := []byte(a.ReadOnly)
		if badSum[len(badSum)-1] == 'A' {
			badSum[len(badSum)-1] = 'B'
		} else {
			badSum[len(badSum)-1] = 'A'
		}

		tests := []struct {
			name   string
			header string // Authorization; "" sends none
		}{
			{"missing header", ""},
			{"basic scheme", "Basic " + a.ReadOnly},
			{"token without scheme", a.ReadOnly},
			{"bearer without token", "Bearer"},
			{"bearer with blank token", "Bearer    "},
			{"bad checksum", "Bearer " + string(badSum)},
			{"truncated key", "Bearer " + a.ReadOnly[:len(a.ReadOnly)-1]},
			{"key prefix only", "Bearer ftk_"},
			{"unknown well-formed key", "Bearer " + unknown.Plaintext},
			{"random garbage", "Bearer zz9!!not-a-token\u00e9"},
			{"three dots", "Bearer a.b.c"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				hdr := map[string]string{"Content-Type": "application/json"}
				if tt.header != "" {
					hdr["Authorization"] = tt.header
				}
				res, body := rawRequest(t, env, http.MethodPost, "/graphql", hdr, gqlBody(`{ organization { id } }`, nil))
				wantUnauthenticated(t, res, body)
			})
		}

		t.Run("GET without header", func(t *testing.T) {
			res, body := rawRequest(t, env, http.MethodGet, "/graphql?query=%7Borganization%7Bid%7D%7D", nil, nil)
			wantUnauthenticated(t, res, body)
		})

		t.Run("valid key is accepted (control)", func(t *testing.T) {
			d := env.MustGraphQL(a.ReadOnly, `{ organization { id } }`, nil)
			if got := ft.Dig(d, "organization", "id"); got != a.Org.ID {
				t.Fatalf("organization.id = %v, want %s", got, a.Org.ID)
			}
			// The scheme is case-insensitive (RFC 9110).
			res, body := rawRequest(t, env, http.MethodPost, "/graphql",
				map[string]string{"Authorization": "bearer " + a.ReadOnly, "Content-Type": "application/json"},
				gqlBody(`{ organization { id } }`, nil))
			if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(a.Org.ID)) {
				t.Fatalf("lower-case scheme: %d %s", res.StatusCode, body)
			}
		})

		t.Run("revoked key is refused on the next request", func(t *testing.T) {
			revokedKeyIsRefusedOnTheNextRequest(t, env, a)
		})
	})
}

func wantUnauthenticated(t *testing.T, res *http.Response, body []byte) {
	t.Helper()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status = %d, want 401: %s", res.StatusCode, body)
	}
	if h := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
		t.Fatalf("WWW-Authenticate = %q, want a Bearer challenge", h)
	}
	var r ft.Response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("401 body is not JSON: %v: %s", err, body)
	}
	if r.Code() != server.CodeUnauthenticated || r.Errors[0].Message == "" {
		t.Fatalf("401 body = %s, want an UNAUTHENTICATED error with a message", body)
	}
	if r.Data != nil {
		t.Fatalf("401 body carries data: %s", body)
	}
}

// revokedKeyIsRefusedOnTheNextRequest revokes keys through revokeApiKey and checks that
// the very next request with them is a 401, while the tenant's other keys keep working.
func revokedKeyIsRefusedOnTheNextRequest(t *testing.T, env *ft.Env, a ft.Tenant) {
	t.Helper()
	// A key made through the API, used once, revoked, then refused.
	d := env.MustGraphQL(a.Admin, `mutation { createApiKey(input: {name: "ci", scope: READ_WRITE}) { key apiKey { id } } }`, nil)
	key, id := str(ft.Dig(d, "createApiKey", "key")), str(ft.Dig(d, "createApiKey", "apiKey", "id"))
	wantOK(t, env.GraphQL(key, `{ traps { totalCount } }`, nil))

	r := env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`, map[string]any{"id": id})
	revokedAt := str(ft.Dig(r, "revokeApiKey", "revokedAt"))
	if revokedAt == "" {
		t.Fatalf("revokeApiKey returned no revokedAt: %v", r)
	}
	res, body := rawRequest(t, env, http.MethodPost, "/graphql",
		map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"},
		gqlBody(`{ traps { totalCount } }`, nil))
	wantUnauthenticated(t, res, body)

	// Revoking again keeps the first revocation time.
	r2 := env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`, map[string]any{"id": id})
	if got := str(ft.Dig(r2, "revokeApiKey", "revokedAt")); got != revokedAt {
		t.Fatalf("second revoke changed revokedAt from %s to %s", revokedAt, got)
	}

	// A seeded key, revoked the same way; the tenant's other keys keep working.
	wantOK(t, env.GraphQL(a.ReadOnly, `{ organization { id } }`, nil))
	env.MustGraphQL(a.Admin, `mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, map[string]any{"id": keyID(t, env, a.ReadOnly)})
	res, body = rawRequest(t, env, http.MethodPost, "/graphql",
		map[string]string{"Authorization": "Bearer " + a.ReadOnly, "Content-Type": "application/json"},
		gqlBody(`{ organization { id } }`, nil))
	wantUnauthenticated(t, res, body)
	wantOK(t, env.GraphQL(a.ReadWrite, `{ organization { id } }`, nil))
}

// ---- scopes -----------------------------------------------------------------

func TestScopes(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		sys := ft.System()

		// Fixtures each operation can act on; a fresh one per case where the operation consumes it.
		newTrap := func() string {
			return str(createTrap(t, env, a.Admin, map[string]any{"name": "fixture", "type": "page"})["id"])
		}
		newSite := func() string {
			s, err := env.DB.Client.Site.Create().SetOrgID(a.Org.ID).SetName("spare").Save(sys)
			if err != nil {
				t.Fatal(err)
			}
			return s.ID
		}
		newKey := func() string { return keyID(t, env, env.Key(a.Org.ID, viewer.ReadOnly)) }
		seedSession(t, env, a.Org.ID, nil)
		existingTrap := newTrap()

		type op struct {
			name  string
			query string
			vars  func() map[string]any
			need  viewer.Scope
			// effect reports whether the operation took effect; checked after a refusal.
			effect func(vars map[string]any) bool
		}
		none := func() map[string]any { return nil }
		ops := []op{
			{name: "traps", query: `{ traps { totalCount edges { node { id } } } }`, vars: none, need: viewer.ReadOnly},
			{name: "sessions", query: `{ sessions { totalCount edges { node { id hits { totalCount } } } } }`, vars: none, need: viewer.ReadOnly},
			{name: "events", query: `{ events { totalCount } }`, vars: none, need: viewer.ReadOnly},
			{name: "sites", query: `{ sites { totalCount } }`, vars: none, need: viewer.ReadOnly},
			{name: "organization", query: `{ organization { id name } }`, vars: none, need: viewer.ReadOnly},
			{name: "analytics", query: `{ analytics { overview { totalHits24h activeTraps } severity { high } timeline { hour hits } } }`, vars: none, need: viewer.ReadOnly},
			{name: "node", query: `query($id: ID!) { node(id: $id) { id } }`, vars: func() map[string]any { return map[string]any{"id": existingTrap} }, need: viewer.ReadOnly},
			{name: "apiKeys", query: `{ apiKeys { totalCount } }`, vars: none, need: viewer.Admin},
			{
				name: "createTrap", query: `mutation { createTrap(input: {name: "x", type: api}) { id } }`, vars: none, need: viewer.ReadWrite,
				effect: func(map[string]any) bool {
					n, _ := env.DB.Client.Trap.Query().Where(enttrap.Name("x")).Count(sys)
					return n > 0
				},
			},
			{
				name: "updateTrap", query: `mutation($id: ID!) { updateTrap(id: $id, input: {name: "renamed"}) { id name } }`,
				vars: func() map[string]any { return map[string]any{"id": newTrap()} }, need: viewer.ReadWrite,
				effect: func(v map[string]any) bool {
					tr, err := env.DB.Client.Trap.Get(sys, str(v["id"]))
					return err != nil || tr.Name == "renamed"
				},
			},
			{
				name: "deleteTrap", query: `mutation($id: ID!) { deleteTrap(id: $id) { id deleted } }`,
				vars: func() map[string]any { return map[string]any{"id": newTrap()} }, need: viewer.ReadWrite,
				effect: func(v map[string]any) bool {
					n, _ := env.DB.Client.Trap.Query().Where(enttrap.ID(str(v["id"]))).Count(sys)
					return n == 0
				},
			},
			{
				name: "createApiKey", query: `mutation { createApiKey(input: {name: "k", scope: READ_ONLY}) { key } }`, vars: none, need: viewer.Admin,
				effect: func(map[string]any) bool {
					n, _ := env.DB.Client.APIKey.Query().Where(entkey.Name("k")).Count(sys)
					return n > 0
				},
			},
			{
				name: "revokeApiKey", query: `mutation($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`,
				vars: func() map[string]any { return map[string]any{"id": newKey()} }, need: viewer.Admin,
				effect: func(v map[string]any) bool {
					k, err := env.DB.Client.APIKey.Get(sys, str(v["id"]))
					return err != nil || k.RevokedAt != nil
				},
			},
			{
				name: "createSite", query: `mutation { createSite(input: {name: "blog"}) { id } }`, vars: none, need: viewer.Admin,
				effect: func(map[string]any) bool {
					n, _ := env.DB.Client.Site.Query().Where(entsite.Name("blog")).Count(sys)
					return n > 0
				},
			},
			{
				name: "updateSite", query: `mutation($id: ID!) { updateSite(id: $id, input: {name: "renamed"}) { id } }`,
				vars: func() map[string]any { return map[string]any{"id": newSite()} }, need: viewer.Admin,
				effect: func(v map[string]any) bool {
					s, err := env.DB.Client.Site.Get(sys, str(v["id"]))
					return err != nil || s.Name == "renamed"
				},
			},
			{
				name: "deleteSite", query: `mutation($id: ID!) { deleteSite(id: $id) { id deleted } }`,
				vars: func() map[string]any { return map[string]any{"id": newSite()} }, need: viewer.Admin,
				effect: func(v map[string]any) bool {
					n, _ := env.DB.Client.Site.Query().Where(entsite.ID(str(v["id"]))).Count(sys)
					return n == 0
				},
			},
			{
				name: "updateOrganization", query: `mutation { updateOrganization(input: {name: "renamed"}) { id name } }`, vars: none, need: viewer.Admin,
				effect: func(map[string]any) bool {
					o, err := env.DB.Client.Organization.Get(sys, a.Org.ID)
					return err != nil || o.Name == "renamed"
				},
			},
		}
		for _, o := range ops {
			for _, s := range []viewer.Scope{viewer.ReadOnly, viewer.ReadWrite, viewer.Admin} {
				t.Run(o.name+"/"+s.Human(), func(t *testing.T) {
					vars := o.vars()
					r := env.GraphQL(a.Key(s), o.query, vars)
					if s.Includes(o.need) {
						wantOK(t, r)
						return
					}
					wantCode(t, r, server.CodeForbidden)
					if r.Status != http.StatusOK {
						t.Fatalf("FORBIDDEN answered HTTP %d, want 200 with errors", r.Status)
					}
					if o.effect != nil && o.effect(vars) {
						t.Fatalf("a refused %s still took effect", o.name)
					}
				})
			}
		}
	})
}

func TestAPIKeyManagement(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")

		const create = `mutation($in: CreateApiKeyInput!) { createApiKey(input: $in) { key apiKey { id orgID name scope prefix createdAt lastUsedAt revokedAt } } }`

		t.Run("only admin keys create keys", func(t *testing.T) {
			for _, caller := range []viewer.Scope{viewer.ReadOnly, viewer.ReadWrite} {
				for _, want := range []string{"READ_ONLY", "READ_WRITE", "ADMIN"} {
					r := env.GraphQL(a.Key(caller), create, map[string]any{"in": map[string]any{"name": "x", "scope": want}})
					wantCode(t, r, server.CodeForbidden)
				}
			}
			n, err := env.DB.Client.APIKey.Query().Where(entkey.OrgID(a.Org.ID)).Count(ft.System())
			if err != nil || n != 3 {
				t.Fatalf("refused creations left %d keys (err %v), want the 3 seeded", n, err)
			}
		})

		// What each scope may do, probed through a key of that scope.
		probes := []struct {
			name  string
			query string
			need  viewer.Scope
		}{
			{"read traps", `{ traps { totalCount } }`, viewer.ReadOnly},
			{"create trap", `mutation { createTrap(input: {name: "probe", type: page}) { id } }`, viewer.ReadWrite},
			{"list keys", `{ apiKeys { totalCount } }`, viewer.Admin},
			{"create site", `mutation { createSite(input: {name: "probe"}) { id } }`, viewer.Admin},
		}

		for _, scope := range []viewer.Scope{viewer.ReadOnly, viewer.ReadWrite, viewer.Admin} {
			t.Run("admin creates "+string(scope), func(t *testing.T) {
				before := time.Now().Add(-time.Second)
				d := env.MustGraphQL(a.Admin, create, map[string]any{"in": map[string]any{"name": "made " + scope.Human(), "scope": string(scope)}})
				key := str(ft.Dig(d, "createApiKey", "key"))
				k := ft.Dig(d, "createApiKey", "apiKey").(map[string]any)
				if !apikey.WellFormed(key) {
					t.Fatalf("created key %q is not well-formed", key)
				}
				if k["scope"] != string(scope) || k["name"] != "made "+scope.Human() || k["orgID"] != a.Org.ID {
					t.Fatalf("apiKey = %v", k)
				}
				if p := str(k["prefix"]); p == "" || !strings.HasPrefix(key, p) || len(p) >= len(key)/2 {
					t.Fatalf("prefix %q is not a short prefix of the key", p)
				}
				if !strings.HasPrefix(str(k["id"]), "key_") || k["lastUsedAt"] != nil || k["revokedAt"] != nil {
					t.Fatalf("apiKey = %v", k)
				}
				if ct, err := time.Parse(time.RFC3339Nano, str(k["createdAt"])); err != nil || ct.Before(before) || ct.After(time.Now().Add(time.Second)) {
					t.Fatalf("createdAt = %v (%v)", k["createdAt"], err)
				}

				// The new key works at once, with exactly its scope.
				for _, p := range probes {
					r := env.GraphQL(key, p.query, nil)
					if scope.Includes(p.need) {
						wantOK(t, r)
					} else {
						wantCode(t, r, server.CodeForbidden)
					}
				}

				// Only its hash is stored, and listings show the prefix, never the key.
				stored, err := env.DB.Client.APIKey.Get(ft.System(), str(k["id"]))
				if err != nil {
					t.Fatal(err)
				}
				if stored.Hash != apikey.Hash(key) || stored.Hash == key || stored.Prefix != k["prefix"] {
					t.Fatalf("stored key: hash %q prefix %q", stored.Hash, stored.Prefix)
				}
				list := env.GraphQL(a.Admin, `{ apiKeys(first: 100) { edges { node { id name scope prefix createdAt lastUsedAt revokedAt } } } }`, nil)
				wantOK(t, list)
				if bytes.Contains(list.Raw, []byte(key)) || bytes.Contains(list.Raw, []byte(key[len(apikey.Prefix)+8:])) {
					t.Fatalf("apiKeys listing contains the key: %s", list.Raw)
				}
				if !slices.Contains(nodeIDs(list.Data["apiKeys"]), str(k["id"])) {
					t.Fatalf("apiKeys listing misses %v", k["id"])
				}
			})
		}

		t.Run("lastUsedAt is written by the usage flush", func(t *testing.T) {
			d := env.MustGraphQL(a.Admin, create, map[string]any{"in": map[string]any{"name": "usage", "scope": "READ_ONLY"}})
			key, id := str(ft.Dig(d, "createApiKey", "key")), str(ft.Dig(d, "createApiKey", "apiKey", "id"))
			unused := str(ft.Dig(env.MustGraphQL(a.Admin, create, map[string]any{"in": map[string]any{"name": "unused", "scope": "READ_ONLY"}}), "createApiKey", "apiKey", "id"))

			before := time.Now().Add(-time.Second)
			wantOK(t, env.GraphQL(key, `{ organization { id } }`, nil))
			wantOK(t, env.GraphQL(key, `{ traps { totalCount } }`, nil))
			after := time.Now().Add(time.Second)

			// No write per request: nothing is stored until the flush.
			if k, err := env.DB.Client.APIKey.Get(ft.System(), id); err != nil || k.LastUsedAt != nil {
				t.Fatalf("lastUsedAt before the flush = %v (err %v), want nil", k.LastUsedAt, err)
			}
			if err := env.Server.FlushUsage(t.Context()); err != nil {
				t.Fatalf("FlushUsage: %v", err)
			}
			q := `query($id: ID!) { node(id: $id) { ... on ApiKey { lastUsedAt } } }`
			got := str(ft.Dig(env.MustGraphQL(a.Admin, q, map[string]any{"id": id}), "node", "lastUsedAt"))
			at, err := time.Parse(time.RFC3339Nano, got)
			if err != nil || at.Before(before) || at.After(after) {
				t.Fatalf("lastUsedAt after the flush = %q (%v), want within [%v, %v]", got, err, before, after)
			}
			if v := ft.Dig(env.MustGraphQL(a.Admin, q, map[string]any{"id": unused}), "node", "lastUsedAt"); v != nil {
				t.Fatalf("an unused key has lastUsedAt %v", v)
			}
		})
	})
}

// ---- traps and their events ---------------------------------------------------

func TestTrapLifecycle(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		var wantEvents []string // types of the events the mutations below must have written, in order
		var created map[string]any

		t.Run("create returns every field", func(t *testing.T) {
			before := time.Now().Add(-time.Second)
			tr := createTrap(t, env, a.ReadWrite, map[string]any{
				"name": "Internal docs", "type": "page", "path": "/internal/docs", "description": "bait for agents",
			})
			after := time.Now().Add(time.Second)
			wantEvents = append(wantEvents, "trap.created")
			want := map[string]any{
				"orgID": a.Org.ID, "siteID": a.Site.ID, "name": "Internal docs", "path": "/internal/docs",
				"type": "page", "description": "bait for agents", "active": true,
			}
			for k, v := range want {
				if tr[k] != v {
					t.Errorf("%s = %v, want %v", k, tr[k], v)
				}
			}
			if !trapIDRE.MatchString(str(tr["id"])) {
				t.Errorf("id = %v, want trp_ and a lower-case ULID", tr["id"])
			}
			if ft.Dig(tr, "site", "id") != a.Site.ID {
				t.Errorf("site = %v, want %s", tr["site"], a.Site.ID)
			}
			for _, f := range []string{"createdAt", "updatedAt"} {
				ts, err := time.Parse(time.RFC3339Nano, str(tr[f]))
				if err != nil || ts.Before(before) || ts.After(after) || !strings.HasSuffix(str(tr[f]), "Z") {
					t.Errorf("%s = %v (%v), want a UTC time of now", f, tr[f], err)
				}
			}

			created = tr
		})

		t.Run("what createTrap answers is what is stored", func(t *testing.T) {
			if created == nil {
				t.Skip("no trap was created")
			}
			got := ft.Dig(env.MustGraphQL(a.ReadOnly, `query($id: ID!) { node(id: $id) { ... on Trap { `+trapFields+` } } }`,
				map[string]any{"id": created["id"]}), "node").(map[string]any)
			for k, v := range created {
				if fmt.Sprint(got[k]) != fmt.Sprint(v) {
					t.Errorf("read back %s = %v, createTrap answered %v", k, got[k], v)
				}
			}
		})

		t.Run("description and active are optional", func(t *testing.T) {
			tr := createTrap(t, env, a.ReadWrite, map[string]any{"name": "Plain", "type": "api", "path": "/api/plain"})
			wantEvents = append(wantEvents, "trap.created")
			if tr["description"] != "" || tr["active"] != true {
				t.Fatalf("defaults: description %q active %v", tr["description"], tr["active"])
			}
		})

		t.Run("path omitted gets a generated path", func(t *testing.T) {
			seen := map[string]bool{}
			for _, typ := range []string{"page", "api", "credential", "mcp"} {
				tr := createTrap(t, env, a.ReadWrite, map[string]any{"name": "gen " + typ, "type": typ})
				wantEvents = append(wantEvents, "trap.created")
				p := str(tr["path"])
				if !strings.HasPrefix(p, "/") || len(p) < 2 || strings.ContainsAny(p, " ?#\t") || seen[p] {
					t.Fatalf("generated path for %s = %q", typ, p)
				}
				seen[p] = true
			}
		})

		t.Run("llms_txt lives at /llms.txt", func(t *testing.T) {
			tr := createTrap(t, env, a.ReadWrite, map[string]any{"name": "llms", "type": "llms_txt"})
			wantEvents = append(wantEvents, "trap.created")
			if tr["path"] != "/llms.txt" || tr["type"] != "llms_txt" {
				t.Fatalf("llms_txt trap: path %v type %v", tr["path"], tr["type"])
			}
		})

		t.Run("duplicate active path on a site conflicts", func(t *testing.T) {
			first := createTrap(t, env, a.ReadWrite, map[string]any{"name": "one", "type": "page", "path": "/dup"})
			wantEvents = append(wantEvents, "trap.created")
			dup := `mutation($in: CreateTrapInput!) { createTrap(input: $in) { id } }`
			r := env.GraphQL(a.ReadWrite, dup, map[string]any{"in": map[string]any{"name": "two", "type": "api", "path": "/dup"}})
			wantCode(t, r, server.CodeConflict)
			if r.Data != nil && ft.Dig(r.Data, "createTrap") != nil {
				t.Fatalf("conflicting createTrap returned data: %s", r.Raw)
			}

			// Inactive, the first no longer holds the path.
			u := env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: false}) { active } }`, map[string]any{"id": first["id"]})
			wantEvents = append(wantEvents, "trap.updated")
			if ft.Dig(u, "updateTrap", "active") != false {
				t.Fatalf("updateTrap active:false answered %v", u)
			}
			second := createTrap(t, env, a.ReadWrite, map[string]any{"name": "two", "type": "api", "path": "/dup"})
			wantEvents = append(wantEvents, "trap.created")

			// Turning the first back on would make two active traps on one path.
			r = env.GraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: true}) { id } }`, map[string]any{"id": first["id"]})
			wantCode(t, r, server.CodeConflict)

			// Another site of the organization may use the same path.
			site := str(ft.Dig(env.MustGraphQL(a.Admin, `mutation { createSite(input: {name: "blog", host: "blog.example.com"}) { id } }`, nil), "createSite", "id"))
			other := createTrap(t, env, a.ReadWrite, map[string]any{"name": "three", "type": "page", "path": "/dup", "siteID": site})
			wantEvents = append(wantEvents, "trap.created")
			if other["siteID"] != site || ft.Dig(other, "site", "id") != site {
				t.Fatalf("trap on the second site: %v", other)
			}
			n, err := env.DB.Client.Trap.Query().Where(enttrap.Path("/dup")).Count(ft.System())
			if err != nil || n != 3 || second["id"] == first["id"] {
				t.Fatalf("traps on /dup = %d (err %v), want 3", n, err)
			}
		})

		var updated map[string]any
		t.Run("update changes name, description and active", func(t *testing.T) {
			tr := createTrap(t, env, a.ReadWrite, map[string]any{"name": "before", "type": "page", "path": "/upd"})
			wantEvents = append(wantEvents, "trap.created")
			d := env.MustGraphQL(a.ReadWrite, `mutation($id: ID!, $in: UpdateTrapInput!) { updateTrap(id: $id, input: $in) { `+trapFields+` } }`,
				map[string]any{"id": tr["id"], "in": map[string]any{"name": "after", "description": "new words", "active": false}})
			wantEvents = append(wantEvents, "trap.updated")
			updated = ft.Dig(d, "updateTrap").(map[string]any)
			if updated["name"] != "after" || updated["description"] != "new words" || updated["active"] != false {
				t.Fatalf("updateTrap = %v", updated)
			}
			for _, k := range []string{"id", "path", "type", "orgID", "siteID"} {
				if fmt.Sprint(updated[k]) != fmt.Sprint(tr[k]) {
					t.Errorf("update changed %s: %v → %v", k, tr[k], updated[k])
				}
			}
			// (Compared to the microsecond: see bugTimePrecision.)
			c0, _ := time.Parse(time.RFC3339Nano, str(tr["createdAt"]))
			if c1, err := time.Parse(time.RFC3339Nano, str(updated["createdAt"])); err != nil || c1.Sub(c0).Abs() >= time.Microsecond {
				t.Errorf("update changed createdAt: %v → %v", tr["createdAt"], updated["createdAt"])
			}
			c, _ := time.Parse(time.RFC3339Nano, str(tr["updatedAt"]))
			u, err := time.Parse(time.RFC3339Nano, str(updated["updatedAt"]))
			if err != nil || u.Before(c.Truncate(time.Microsecond)) {
				t.Errorf("updatedAt %v is before the previous %v", updated["updatedAt"], tr["updatedAt"])
			}
			// A partial update leaves the other fields alone.
			d = env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: true}) { name description active } }`, map[string]any{"id": tr["id"]})
			wantEvents = append(wantEvents, "trap.updated")
			if p := ft.Dig(d, "updateTrap").(map[string]any); p["name"] != "after" || p["description"] != "new words" || p["active"] != true {
				t.Fatalf("partial update = %v", p)
			}
		})

		t.Run("delete keeps sessions and hits", func(t *testing.T) {
			tr := createTrap(t, env, a.ReadWrite, map[string]any{"name": "doomed", "type": "api", "path": "/doomed"})
			wantEvents = append(wantEvents, "trap.created")
			id := str(tr["id"])
			s := seedSession(t, env, a.Org.ID, func(c *ent.SessionCreate) { c.SetTrapsTriggered([]string{id}).SetHitCount(2) })
			hits := seedHits(t, env, s, id, time.Now().Add(-time.Minute), time.Now())

			d := env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { deleteTrap(id: $id) { id deleted } }`, map[string]any{"id": id})
			wantEvents = append(wantEvents, "trap.deleted")
			if ft.Dig(d, "deleteTrap", "id") != id || ft.Dig(d, "deleteTrap", "deleted") != true {
				t.Fatalf("deleteTrap = %v", d)
			}
			r := env.GraphQL(a.ReadOnly, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id})
			if r.Status >= 500 || ft.Dig(r.Data, "node") != nil {
				t.Fatalf("node of a deleted trap: %s", r.Raw)
			}
			if c := r.Code(); c != "" && c != server.CodeNotFound {
				t.Fatalf("node of a deleted trap: code %s", c)
			}
			if ids := nodeIDs(env.MustGraphQL(a.ReadOnly, `{ traps(first: 100) { edges { node { id } } } }`, nil)["traps"]); slices.Contains(ids, id) {
				t.Fatalf("deleted trap still listed")
			}
			// Deleting again: not found.
			wantCode(t, env.GraphQL(a.ReadWrite, `mutation($id: ID!) { deleteTrap(id: $id) { id } }`, map[string]any{"id": id}), server.CodeNotFound)

			sd := env.MustGraphQL(a.ReadOnly, `query($id: ID!) { node(id: $id) { ... on Session { id trapsTriggered hits { totalCount edges { node { id trapID } } } } } }`, map[string]any{"id": s.ID})
			if ft.Dig(sd, "node", "id") != s.ID || num(ft.Dig(sd, "node", "hits", "totalCount")) != len(hits) {
				t.Fatalf("session after the trap's deletion: %v", sd)
			}
			if ft.Dig(sd, "node", "trapsTriggered", 0) != id || ft.Dig(sd, "node", "hits", "edges", 0, "node", "trapID") != id {
				t.Fatalf("history lost the deleted trap's id: %v", sd)
			}
		})

		t.Run("every change has its event, in order", func(t *testing.T) {
			d := env.MustGraphQL(a.ReadOnly, `{ events(first: 50) { totalCount edges { cursor node { id orgID position type apiVersion createdAt data } } } }`, nil)
			evs := nodes(d["events"])
			if num(ft.Dig(d, "events", "totalCount")) != len(wantEvents) || len(evs) != len(wantEvents) {
				t.Fatalf("%d events (totalCount %v), want %d: %v", len(evs), ft.Dig(d, "events", "totalCount"), len(wantEvents), wantEvents)
			}
			prev := -1
			for i, e := range evs {
				if e["type"] != wantEvents[i] {
					t.Errorf("event %d type = %v, want %s", i, e["type"], wantEvents[i])
				}
				if p := num(e["position"]); p <= prev {
					t.Errorf("event %d position %d not after %d", i, p, prev)
				} else {
					prev = p
				}
				if !strings.HasPrefix(str(e["id"]), "evt_") || e["orgID"] != a.Org.ID {
					t.Errorf("event %d: id %v org %v", i, e["id"], e["orgID"])
				}
				if !apiVersionRE.MatchString(str(e["apiVersion"])) {
					t.Errorf("event %d apiVersion = %v, want YYYY-MM-DD", i, e["apiVersion"])
				}
				if !eventTimeRE.MatchString(str(e["createdAt"])) {
					t.Errorf("event %d createdAt = %v, want seconds precision in UTC", i, e["createdAt"])
				}
				if !trapIDRE.MatchString(str(ft.Dig(e, "data", "id"))) || ft.Dig(e, "data", "org_id") != a.Org.ID {
					t.Errorf("event %d data = %v", i, e["data"])
				}
			}
			// The last update and the delete carry the trap as it was then.
			if updated != nil {
				var found bool
				for _, e := range evs {
					if e["type"] == "trap.updated" && ft.Dig(e, "data", "id") == updated["id"] && ft.Dig(e, "data", "name") == "after" &&
						ft.Dig(e, "data", "description") == "new words" && num(ft.Dig(e, "data", "active")) == 0 {
						found = true
					}
				}
				if !found {
					t.Errorf("no trap.updated event carries the update of %v", updated["id"])
				}
			}
			last := evs[len(evs)-1]
			if last["type"] != "trap.deleted" || ft.Dig(last, "data", "name") != "doomed" {
				t.Errorf("last event = %v, want trap.deleted of the doomed trap", last)
			}
		})
	})
}

// ---- pagination -------------------------------------------------------------

func TestPagination(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		const total = 120
		ids := createTraps(t, env, a.ReadWrite, total,
			func(i int) string { return fmt.Sprintf("trap-%03d", i) },
			func(i int) string { return fmt.Sprintf("/p/%03d", i) })

		const page = `query($first: Int, $after: Cursor, $last: Int, $before: Cursor, $orderBy: TrapOrder, $where: TrapWhereInput) {
			traps(first: $first, after: $after, last: $last, before: $before, orderBy: $orderBy, where: $where) {
				totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor } edges { cursor node { id name } } } }`
		get := func(t *testing.T, vars map[string]any) map[string]any {
			t.Helper()
			return env.MustGraphQL(a.ReadOnly, page, vars)["traps"].(map[string]any)
		}

		t.Run("default page is 50", func(t *testing.T) {
			c := get(t, nil)
			if n := len(nodes(c)); n != server.DefaultPageSize {
				t.Fatalf("%d edges, want %d", n, server.DefaultPageSize)
			}
			if num(c["totalCount"]) != total || ft.Dig(c, "pageInfo", "hasNextPage") != true {
				t.Fatalf("totalCount %v hasNextPage %v", c["totalCount"], ft.Dig(c, "pageInfo", "hasNextPage"))
			}
		})

		t.Run("first 100", func(t *testing.T) {
			c := get(t, map[string]any{"first": 100})
			if n := len(nodes(c)); n != 100 || ft.Dig(c, "pageInfo", "hasNextPage") != true {
				t.Fatalf("%d edges, hasNextPage %v", n, ft.Dig(c, "pageInfo", "hasNextPage"))
			}
		})

		walk := func(t *testing.T, size int, orderBy map[string]any) []map[string]any {
			t.Helper()
			var all []map[string]any
			vars := map[string]any{"first": size, "orderBy": orderBy}
			for pages := 0; ; pages++ {
				if pages > total {
					t.Fatal("pagination does not end")
				}
				c := get(t, vars)
				all = append(all, nodes(c)...)
				if num(c["totalCount"]) != total {
					t.Fatalf("totalCount on page %d = %v", pages, c["totalCount"])
				}
				if ft.Dig(c, "pageInfo", "hasNextPage") != true {
					return all
				}
				vars["after"] = ft.Dig(c, "pageInfo", "endCursor")
			}
		}

		for _, size := range []int{50, 7, 100} {
			t.Run(fmt.Sprintf("walk pages of %d", size), func(t *testing.T) {
				all := walk(t, size, nil)
				seen := map[string]bool{}
				for _, n := range all {
					id := str(n["id"])
					if seen[id] {
						t.Fatalf("%s visited twice", id)
					}
					seen[id] = true
				}
				if len(seen) != total {
					t.Fatalf("visited %d traps, want %d", len(seen), total)
				}
				for _, id := range ids {
					if !seen[id] {
						t.Fatalf("%s never visited", id)
					}
				}
			})
		}

		t.Run("order by name descending", func(t *testing.T) {
			all := walk(t, 100, map[string]any{"field": "NAME", "direction": "DESC"})
			if len(all) != total {
				t.Fatalf("%d traps, want %d", len(all), total)
			}
			for i, n := range all {
				if want := fmt.Sprintf("trap-%03d", total-1-i); n["name"] != want {
					t.Fatalf("position %d: %v, want %s", i, n["name"], want)
				}
			}
		})

		t.Run("backwards with last and before", func(t *testing.T) {
			order := map[string]any{"field": "NAME", "direction": "ASC"}
			c := get(t, map[string]any{"last": 10, "orderBy": order})
			ns := nodes(c)
			if len(ns) != 10 || ns[0]["name"] != "trap-110" || ns[9]["name"] != "trap-119" || ft.Dig(c, "pageInfo", "hasPreviousPage") != true {
				t.Fatalf("last 10: %v %v", ns, c["pageInfo"])
			}
			c = get(t, map[string]any{"last": 5, "before": ft.Dig(c, "pageInfo", "startCursor"), "orderBy": order})
			if ns := nodes(c); len(ns) != 5 || ns[0]["name"] != "trap-105" || ns[4]["name"] != "trap-109" {
				t.Fatalf("5 before trap-110: %v", ns)
			}
		})

		t.Run("where nameContains", func(t *testing.T) {
			c := get(t, map[string]any{"first": 100, "where": map[string]any{"nameContains": "-11"}, "orderBy": map[string]any{"field": "NAME"}})
			var names []string
			for _, n := range nodes(c) {
				names = append(names, str(n["name"]))
			}
			want := []string{"trap-110", "trap-111", "trap-112", "trap-113", "trap-114", "trap-115", "trap-116", "trap-117", "trap-118", "trap-119"}
			if !slices.Equal(names, want) || num(c["totalCount"]) != len(want) {
				t.Fatalf("nameContains -11: %v (totalCount %v), want %v", names, c["totalCount"], want)
			}
		})

		t.Run("events page the same way, oldest first", func(t *testing.T) {
			q := `query($after: Cursor) { events(after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { node { position type data } } } }`
			var after any
			var got []string
			prev := -1
			for range 10 {
				d := env.MustGraphQL(a.ReadOnly, q, map[string]any{"after": after})
				ns := nodes(d["events"])
				if len(ns) > server.DefaultPageSize || num(ft.Dig(d, "events", "totalCount")) != total {
					t.Fatalf("events page of %d, totalCount %v", len(ns), ft.Dig(d, "events", "totalCount"))
				}
				for _, n := range ns {
					if p := num(n["position"]); p <= prev || n["type"] != "trap.created" {
						t.Fatalf("event %v after position %d", n, prev)
					} else {
						prev = p
					}
					got = append(got, str(ft.Dig(n, "data", "id")))
				}
				if ft.Dig(d, "events", "pageInfo", "hasNextPage") != true {
					break
				}
				after = ft.Dig(d, "events", "pageInfo", "endCursor")
			}
			if !slices.Equal(got, ids) {
				t.Fatalf("events name %d traps in creation order, want all %d", len(got), total)
			}
		})
	})
}

// ---- analytics --------------------------------------------------------------

func TestAnalytics(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.Tenant("other") // its data must not count for a
		start := time.Now()

		type seed struct {
			class     session.Classification
			sev       session.Severity
			tripwires int
			prompts   int
		}
		seeds := []seed{
			{session.ClassificationAI_AGENT_MALICIOUS, session.SeverityCritical, 3, 1},
			{session.ClassificationAI_AGENT, session.SeverityHigh, 2, 0},
			{session.ClassificationAI_ASSISTANT, session.SeverityMedium, 0, 2},
			{session.ClassificationAI_CRAWLER, session.SeverityHigh, 0, 0},
			{session.ClassificationHUMAN, session.SeverityLow, 0, 0},
			{session.ClassificationBOT, session.SeverityLow, 1, 0},
			{session.ClassificationSCANNER, session.SeverityLow, 0, 0},
		}
		var sessions []*ent.Session
		for _, s := range seeds {
			sessions = append(sessions, seedSession(t, env, a.Org.ID, func(c *ent.SessionCreate) {
				c.SetClassification(s.class).SetSeverity(s.sev).SetTripwiresFired(s.tripwires).SetPromptsCaptured(s.prompts)
			}))
		}
		// Hits at various ages: five within 24 hours, two older.
		ages := []time.Duration{
			time.Minute, 2 * time.Minute, 90 * time.Minute, 5 * time.Hour, 23 * time.Hour,
			25 * time.Hour, 48 * time.Hour,
		}
		var hitTimes []time.Time
		for i, age := range ages {
			at := start.Add(-age)
			hitTimes = append(hitTimes, at)
			seedHits(t, env, sessions[i%len(sessions)], "", at)
		}
		const inLast24h = 5

		// Noise in the other organization, at the same times.
		os := seedSession(t, env, other.Org.ID, func(c *ent.SessionCreate) {
			c.SetClassification(session.ClassificationAI_AGENT_MALICIOUS).SetSeverity(session.SeverityCritical).SetTripwiresFired(50).SetPromptsCaptured(9)
		})
		seedHits(t, env, os, "", hitTimes...)
		createTraps(t, env, other.ReadWrite, 4, func(i int) string { return fmt.Sprint("o", i) }, func(i int) string { return fmt.Sprint("/o", i) })

		// Three traps, one of them inactive.
		trapIDs := createTraps(t, env, a.ReadWrite, 3, func(i int) string { return fmt.Sprint("t", i) }, func(i int) string { return fmt.Sprint("/t", i) })
		env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateTrap(id: $id, input: {active: false}) { id } }`, map[string]any{"id": trapIDs[0]})

		q := `{ analytics { overview { totalHits24h agentsDetected tripwiresFired promptsCaptured activeTraps }
			severity { critical high medium low } timeline { hour hits } } }`
		before := time.Now()
		d := env.MustGraphQL(a.ReadOnly, q, nil)
		after := time.Now()

		t.Run("overview", func(t *testing.T) {
			got := ft.Dig(d, "analytics", "overview")
			want := map[string]int{"totalHits24h": inLast24h, "agentsDetected": 3, "tripwiresFired": 6, "promptsCaptured": 3, "activeTraps": 2}
			for k, v := range want {
				if n := num(ft.Dig(got, k)); n != v {
					t.Errorf("overview.%s = %d, want %d", k, n, v)
				}
			}
		})

		t.Run("severity", func(t *testing.T) {
			got := ft.Dig(d, "analytics", "severity")
			want := map[string]int{"critical": 1, "high": 2, "medium": 1, "low": 3}
			for k, v := range want {
				if n := num(ft.Dig(got, k)); n != v {
					t.Errorf("severity.%s = %d, want %d", k, n, v)
				}
			}
		})

		t.Run("timeline", func(t *testing.T) {
			buckets, _ := ft.Dig(d, "analytics", "timeline").([]any)
			if len(buckets) != 24 {
				t.Fatalf("%d buckets, want 24", len(buckets))
			}
			hours := make([]time.Time, 24)
			for i, bk := range buckets {
				s := str(ft.Dig(bk, "hour"))
				h, err := time.Parse(time.RFC3339, s)
				if err != nil || !strings.HasSuffix(s, ":00:00Z") {
					t.Fatalf("bucket %d hour = %q (%v), want a whole UTC hour", i, s, err)
				}
				hours[i] = h
				if i > 0 && !h.Equal(hours[i-1].Add(time.Hour)) {
					t.Fatalf("bucket %d is %v, want an hour after %v", i, h, hours[i-1])
				}
			}
			// The last bucket is the current hour (the clock may have crossed an hour while the query ran).
			last := hours[23]
			if !last.Equal(before.UTC().Truncate(time.Hour)) && !last.Equal(after.UTC().Truncate(time.Hour)) {
				t.Fatalf("last bucket %v, want the current hour %v", last, after.UTC().Truncate(time.Hour))
			}
			want := make([]int, 24)
			for _, at := range hitTimes {
				if i := 23 - int(last.Sub(at.UTC().Truncate(time.Hour))/time.Hour); i >= 0 && i < 24 {
					want[i]++
				}
			}
			var sum int
			for i, bk := range buckets {
				n := num(ft.Dig(bk, "hits"))
				sum += n
				if n != want[i] {
					t.Errorf("bucket %d (%v) has %d hits, want %d", i, hours[i], n, want[i])
				}
			}
			var wantSum int
			for _, n := range want {
				wantSum += n
			}
			// inLast24h unless the hour turned between seeding and the query.
			if sum != wantSum || wantSum < inLast24h-1 {
				t.Errorf("timeline holds %d hits, want %d", sum, wantSum)
			}
		})

		t.Run("empty organization is all zeros", func(t *testing.T) {
			empty := env.Tenant("empty")
			e := env.MustGraphQL(empty.ReadOnly, q, nil)
			for _, k := range []string{"totalHits24h", "agentsDetected", "tripwiresFired", "promptsCaptured", "activeTraps"} {
				if n := num(ft.Dig(e, "analytics", "overview", k)); n != 0 {
					t.Errorf("overview.%s = %d, want 0", k, n)
				}
			}
			for _, k := range []string{"critical", "high", "medium", "low"} {
				if n := num(ft.Dig(e, "analytics", "severity", k)); n != 0 {
					t.Errorf("severity.%s = %d, want 0", k, n)
				}
			}
			buckets, _ := ft.Dig(e, "analytics", "timeline").([]any)
			if len(buckets) != 24 {
				t.Fatalf("%d buckets, want 24", len(buckets))
			}
			for i, bk := range buckets {
				if n := num(ft.Dig(bk, "hits")); n != 0 {
					t.Errorf("bucket %d has %d hits, want 0", i, n)
				}
			}
		})
	})
}

// ---- operations ---------------------------------------------------------------

func TestOperationalEndpoints(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")

		decode := func(t *testing.T, body []byte) map[string]any {
			t.Helper()
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("body is not a JSON object: %v: %s", err, body)
			}
			return m
		}

		t.Run("healthz", func(t *testing.T) {
			res, body := env.Get("", "/healthz")
			if res.StatusCode != http.StatusOK || decode(t, body)["status"] != "ok" {
				t.Fatalf("/healthz: %d %s", res.StatusCode, body)
			}
		})

		t.Run("readyz checks the database", func(t *testing.T) {
			res, body := env.Get("", "/readyz")
			m := decode(t, body)
			if res.StatusCode != http.StatusOK || m["status"] != "ok" || m["database"] != "ok" {
				t.Fatalf("/readyz: %d %s", res.StatusCode, body)
			}
		})

		t.Run("request ids", func(t *testing.T) {
			tests := []struct {
				name, sent string
				echoed     bool
			}{
				{"sane id is echoed", "req-42.abc_DEF", true},
				{"absent id is generated", "", false},
				{"id with spaces is replaced", "hello world", false},
				{"id with markup is replaced", "<script>alert(1)</script>", false},
				{"overlong id is replaced", strings.Repeat("a", 65), false},
			}
			seen := map[string]bool{}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					hdr := map[string]string{}
					if tt.sent != "" {
						hdr["X-Request-Id"] = tt.sent
					}
					for _, path := range []string{"/healthz", "/no/such/route"} {
						res, _ := rawRequest(t, env, http.MethodGet, path, hdr, nil)
						got := res.Header.Get("X-Request-Id")
						if tt.echoed {
							if got != tt.sent {
								t.Fatalf("%s: X-Request-Id = %q, want %q echoed", path, got, tt.sent)
							}
							continue
						}
						if got == "" || got == tt.sent || !generatedIDRE.MatchString(got) || seen[got] {
							t.Fatalf("%s: X-Request-Id = %q, want a fresh generated id", path, got)
						}
						seen[got] = true
					}
				})
			}
			// Also on GraphQL responses, including 401s.
			res, _ := rawRequest(t, env, http.MethodPost, "/graphql", map[string]string{"X-Request-Id": "gql-1", "Content-Type": "application/json"}, gqlBody(`{ organization { id } }`, nil))
			if res.StatusCode != http.StatusUnauthorized || res.Header.Get("X-Request-Id") != "gql-1" {
				t.Fatalf("401 response: status %d X-Request-Id %q", res.StatusCode, res.Header.Get("X-Request-Id"))
			}
		})

		t.Run("unknown routes are JSON 404s", func(t *testing.T) {
			for _, p := range []string{"/nope", "/api/v9/unknown", "/graphql/extra", "/.env"} {
				for _, tok := range []string{"", a.Admin} {
					res, body := env.Get(tok, p)
					m := decode(t, body)
					if res.StatusCode != http.StatusNotFound || m["success"] != false || str(m["error"]) == "" {
						t.Fatalf("GET %s: %d %s, want 404 {success:false, error}", p, res.StatusCode, body)
					}
					if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
						t.Fatalf("GET %s: Content-Type %q", p, ct)
					}
				}
			}
		})

		t.Run("wrong methods are JSON errors", func(t *testing.T) {
			for _, p := range []string{"/healthz", "/readyz"} {
				res, body := rawRequest(t, env, http.MethodPost, p, nil, strings.NewReader("{}"))
				m := decode(t, body)
				if res.StatusCode >= 500 || res.StatusCode < 400 || m["success"] != false || str(m["error"]) == "" {
					t.Fatalf("POST %s: %d %s, want a 4xx {success:false, error}", p, res.StatusCode, body)
				}
			}
		})

		t.Run("wrong methods on operational routes are 405", func(t *testing.T) {
			for _, p := range []string{"/healthz", "/readyz"} {
				res, body := rawRequest(t, env, http.MethodPost, p, nil, strings.NewReader("{}"))
				if res.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(res.Header.Get("Allow"), "GET") {
					t.Errorf("POST %s: %d (Allow %q) %s, want 405 with Allow: GET", p, res.StatusCode, res.Header.Get("Allow"), body)
				}
			}
		})

		t.Run("GraphQL over GET", func(t *testing.T) {
			res, body := env.Get(a.ReadOnly, "/graphql?query=%7Borganization%7Bid%7D%7D")
			if res.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(a.Org.ID)) {
				t.Fatalf("GET /graphql: %d %s", res.StatusCode, body)
			}
		})
	})
}

// TestTimesAreUTCWhateverTheDatabaseZone runs the API against a PostgreSQL database whose
// sessions default to another time zone: every time the API shows must still be UTC.
func TestTimesAreUTCWhateverTheDatabaseZone(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		if b.Name != "postgres" {
			t.Skip("only PostgreSQL sessions have a time zone")
		}
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		ctx := t.Context()
		var db string
		if err := env.DB.SQL.QueryRowContext(ctx, "SELECT current_database()").Scan(&db); err != nil {
			t.Fatal(err)
		}
		if _, err := env.DB.SQL.ExecContext(ctx, `ALTER DATABASE "`+db+`" SET timezone TO 'Asia/Kolkata'`); err != nil {
			t.Fatal(err)
		}
		// Drop the pooled connections so that new ones pick the database's zone up.
		env.DB.SQL.SetMaxIdleConns(0)
		env.DB.SQL.SetMaxIdleConns(10)
		var zone string
		if err := env.DB.SQL.QueryRowContext(ctx, "SHOW timezone").Scan(&zone); err != nil || zone != "UTC" {
			t.Fatalf("session zone %q (%v): the store must pin its sessions to UTC whatever the database says", zone, err)
		}

		createTrap(t, env, a.ReadWrite, map[string]any{"name": "zoned", "type": "page", "path": "/zoned"})
		d := env.MustGraphQL(a.ReadOnly, `{ traps { edges { node { createdAt updatedAt } } } events { edges { node { createdAt } } }
			organization { createdAt } analytics { timeline { hour } } }`, nil)
		times := []any{
			ft.Dig(d, "traps", "edges", 0, "node", "createdAt"), ft.Dig(d, "traps", "edges", 0, "node", "updatedAt"),
			ft.Dig(d, "events", "edges", 0, "node", "createdAt"), ft.Dig(d, "organization", "createdAt"),
			ft.Dig(d, "analytics", "timeline", 23, "hour"),
		}
		for i, v := range times {
			if s := str(v); !strings.HasSuffix(s, "Z") {
				t.Errorf("time %d = %q, want UTC (…Z)", i, s)
			}
		}
		if s := str(times[2]); !eventTimeRE.MatchString(s) {
			t.Errorf("event createdAt = %q, want YYYY-MM-DDTHH:MM:SSZ", s)
		}
	})
}

// totalCount of the sessions connection equals the number of sessions the filter selects,
// whether it comes from the counters (no filter, severity, classification, both) or from a
// COUNT (any other filter), and counts the caller's organization only.
func TestSessionsTotalCount(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b)
		a := env.Tenant("acme")
		other := env.Tenant("other")
		classes := []session.Classification{session.ClassificationHUMAN, session.ClassificationAI_AGENT, session.ClassificationBOT}
		sevs := []session.Severity{session.SeverityLow, session.SeverityHigh, session.SeverityCritical, session.SeverityHigh}
		for i := range 11 {
			seedSession(t, env, a.Org.ID, func(c *ent.SessionCreate) {
				c.SetClassification(classes[i%3]).SetSeverity(sevs[i%4]).SetSourceIP(fmt.Sprintf("192.0.2.%d", i%5))
			})
		}
		seedSession(t, env, other.Org.ID, func(c *ent.SessionCreate) { c.SetSeverity(session.SeverityHigh) })
		q := `query($w: SessionWhereInput) { sessions(first: 2, where: $w) { totalCount edges { node { id } } } }`
		for _, tc := range []struct {
			where map[string]any
			want  int
		}{
			{nil, 11},
			{map[string]any{"severity": "high"}, 5},
			{map[string]any{"classification": "AI_AGENT"}, 4},
			{map[string]any{"severity": "high", "classification": "AI_AGENT"}, 2},
			{map[string]any{"severity": "medium"}, 0},
			{map[string]any{"sourceIP": "192.0.2.1"}, 2},
			{map[string]any{"severity": "high", "sourceIP": "192.0.2.1"}, 1},
		} {
			d := env.MustGraphQL(a.ReadOnly, q, map[string]any{"w": tc.where})
			if n := num(ft.Dig(d, "sessions", "totalCount")); n != tc.want {
				t.Errorf("where %v: totalCount %d, want %d", tc.where, n, tc.want)
			}
		}
	})
}
