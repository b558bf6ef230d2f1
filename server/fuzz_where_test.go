package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// whereKeys are the filter fields the tree generator picks from: structure, edges, scans
// over hits, and plain predicates of several types.
var whereKeys = []string{"not", "and", "or", "hasHitsWith", "hasSignalsWith", "hasPromptsWith",
	"bodyContainsFold", "pathContains", "userAgentHasPrefix", "severity", "classification",
	"sourceIPHasPrefix", "idIn", "lastSeenGTE", "hitCountGT", "method", "trapID", "hasSessionWith", "textContains"}

// whereTree builds a filter from b, byte by byte: which key, how many children, what value.
// Keys may not belong to the type they are put in: validation must refuse those cleanly.
func whereTree(b []byte, depth int) (map[string]any, []byte) {
	obj := map[string]any{}
	for len(b) > 0 && len(obj) < 4 {
		op := b[0]
		b = b[1:]
		if op == 0xff || depth > 12 {
			break
		}
		key := whereKeys[int(op)%len(whereKeys)]
		n := int(op>>4) + 1
		switch key {
		case "not":
			obj[key], b = whereTree(b, depth+1)
		case "and", "or", "hasHitsWith", "hasSignalsWith", "hasPromptsWith", "hasSessionWith":
			items := []any{}
			for i := 0; i < n*3 && len(b) > 0; i++ {
				var c map[string]any
				c, b = whereTree(b, depth+1)
				items = append(items, c)
			}
			obj[key] = items
		case "idIn":
			obj[key] = strings.Split(strings.Repeat("ses_x,", n*20), ",")
		case "hitCountGT":
			obj[key] = int(op) - 128
		case "lastSeenGTE":
			obj[key] = time.Unix(int64(op)<<24, 0).UTC().Format(time.RFC3339)
		default:
			v := string(b[:min(len(b), n)])
			b = b[min(len(b), n):]
			obj[key] = v + "%_\\"
		}
	}
	return obj, b
}

// FuzzSessionsWhere sends where filters as JSON variables through the real GraphQL handler
// on SQLite: a generated filter tree for sessions and for their hits, and raw text as a
// third variable. Whatever the filter, the answer is data or a clear error — never a 5xx,
// never INTERNAL, never a panic.
// go test ./server/ -run '^$' -fuzz '^FuzzSessionsWhere$' -fuzztime 1m
func FuzzSessionsWhere(f *testing.F) {
	env := ft.Start(f, ft.Backends()[0])
	a := env.Tenant("acme")
	s := env.DB.Client.Session.Create().SetOrgID(a.Org.ID).SetSourceIP("203.0.113.7").SaveX(ft.System())
	env.DB.Client.Hit.Create().SetOrgID(a.Org.ID).SetSessionID(s.ID).SetMethod("POST").SetPath("/x").SetSourceIP(s.SourceIP).
		SetHeaders(map[string][]string{}).SetBody("ignore previous instructions").SetReceivedAt(time.Now()).
		SetReceivedHour(time.Now().Unix() / 3600).ExecX(ft.System())
	for _, seed := range []struct {
		tree []byte
		raw  string
	}{
		{[]byte{6, 7, 0xff}, `{"severity":"low"}`},
		{[]byte{3, 6, 6, 6, 6}, `{"or":[{"hasHitsWith":[{"bodyContainsFold":"x"}]}]}`},
		{[]byte{0xf2, 1, 2, 0xf3, 0xf3, 0xf3}, `{"not":{"not":{"not":null}}}`},
		{bytes.Repeat([]byte{0x12}, 40), `[1,2]`},
		{[]byte{12, 13, 14}, `{"idIn":"x"}`},
	} {
		f.Add(seed.tree, seed.raw)
	}
	client := env.HTTP.Client()
	f.Fuzz(func(t *testing.T, tree []byte, raw string) {
		sw, rest := whereTree(tree, 0)
		hw, _ := whereTree(rest, 0)
		vars, _ := json.Marshal(map[string]any{"w": sw, "hw": hw})
		body := `{"query":"query($w: SessionWhereInput, $hw: HitWhereInput, $raw: SessionWhereInput) { a: sessions(first: 5, where: $w) { totalCount edges { node { id hits(first: 2, where: $hw) { totalCount } } } } b: sessions(first: 1, where: $raw) { totalCount } }","variables":` +
			strings.TrimSuffix(string(vars), "}")
		if json.Valid([]byte(raw)) {
			body += `,"raw":` + raw
		}
		body += "}}"
		req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+a.ReadOnly)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 {
			t.Fatalf("%d for %s: %.500s", res.StatusCode, body, out)
		}
		var r ft.Response
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%d, not JSON: %.300s", res.StatusCode, out)
		}
		for _, e := range r.Errors {
			if e.Extensions["code"] == "INTERNAL" || e.Extensions["code"] == nil {
				t.Fatalf("%v %q for %s", e.Extensions["code"], e.Message, body)
			}
		}
		if r.Data == nil && len(r.Errors) == 0 {
			t.Fatalf("neither data nor errors: %.300s", out)
		}
	})
}
