package trap_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/decoy"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// A trap's name and description are the operator's: no byte of them reaches a visitor.
// One trap of every registered kind (a new kind is covered without touching this test),
// each with a distinctive name and description, is read every way a visitor reads it —
// its decoy (GET, and POST for a kind with a protocol of its own), robots.txt, llms.txt,
// a 404, the lures the proxy puts into the customer's pages, the lure snippet — and none of
// those words appear; the public title an operator sets does.
func TestNoOwnerWordsReachVisitors(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		const appPage = "<!DOCTYPE html>\n<html><head><title>Shop</title></head>\n<body>\n<h1>Welcome</h1>\n<p>Our products.</p>\n</body>\n</html>\n"
		upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, appPage)
		}))
		t.Cleanup(upstream.Close)
		u, _ := url.Parse(upstream.URL)
		env := ft.Start(t, b, func(c *server.Config) { c.Proxy.Upstream = u })
		a := env.Tenant("acme")

		// Words no generated text holds: each trap's name and description are made of them.
		var secret []string
		type made struct{ id, path, kind string }
		var traps []made
		for i, k := range decoy.Kinds {
			name := fmt.Sprintf("Quokkaname%d Zebulonowner%d", i, i)
			desc := fmt.Sprintf("Privatissimo%d notes of Xylophage%d for the operator only", i, i)
			secret = append(secret, fmt.Sprintf("Quokkaname%d", i), fmt.Sprintf("Zebulonowner%d", i),
				fmt.Sprintf("Privatissimo%d", i), fmt.Sprintf("Xylophage%d", i), "Quokkaname", "Zebulonowner", "Privatissimo", "Xylophage")
			d := env.MustGraphQL(a.ReadWrite, `mutation($n: String!, $d: String!, $t: TrapType!) {
				createTrap(input: {name: $n, description: $d, type: $t}) { id path } }`,
				map[string]any{"n": name, "d": desc, "t": k.Name})
			traps = append(traps, made{ft.Dig(d, "createTrap", "id").(string), ft.Dig(d, "createTrap", "path").(string), k.Name})
		}
		// One more page whose operator chose the public title: it is what visitors read.
		d := env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input: {name: "Quokkaname page Zebulonowner", description: "Privatissimo Xylophage",
			publicTitle: "Partner onboarding guide", type: page, path: "/docs/partners/onboarding"}) { id path publicTitle } }`, nil)
		if ft.Dig(d, "createTrap", "publicTitle") != "Partner onboarding guide" {
			t.Fatalf("publicTitle not stored: %v", d)
		}
		titled := made{ft.Dig(d, "createTrap", "id").(string), "/docs/partners/onboarding", "page"}
		traps = append(traps, titled)

		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		read := func(method, path, ctype, body string) string {
			t.Helper()
			req, err := http.NewRequest(method, env.Trap.URL+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36")
			req.Header.Set("Accept", "text/html,application/json,*/*")
			if ctype != "" {
				req.Header.Set("Content-Type", ctype)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			var hdr bytes.Buffer
			_ = res.Header.Write(&hdr)
			return hdr.String() + "\n" + string(raw)
		}
		check := func(what, text string) {
			t.Helper()
			low := strings.ToLower(text)
			for _, w := range secret {
				if strings.Contains(low, strings.ToLower(w)) {
					t.Fatalf("%s carries the operator's word %q:\n%s", what, w, text)
				}
			}
		}

		seen := map[string]string{}
		for _, tr := range traps {
			body := read(http.MethodGet, tr.path, "", "")
			check("GET "+tr.path+" ("+tr.kind+")", body)
			seen[tr.kind] += body
			if k := decoy.MustKind(tr.kind); k.Speaks() {
				for _, rpc := range []string{
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
					`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
					`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`,
					`{"jsonrpc":"2.0","id":4,"method":"prompts/list"}`,
				} {
					check("POST "+tr.path+" ("+tr.kind+")", read(http.MethodPost, tr.path, "application/json", rpc))
				}
			} else {
				check("POST "+tr.path+" ("+tr.kind+")", read(http.MethodPost, tr.path, "application/json", `{"q":1}`))
			}
			snip := env.MustGraphQL(a.ReadOnly, `query($id: ID!) { lureSnippet(trapID: $id) { html } }`, map[string]any{"id": tr.id})
			check("the lure snippet of "+tr.kind, fmt.Sprint(snip))
		}
		for _, p := range []string{"/robots.txt", "/llms.txt", "/no/such/page"} {
			check(p, read(http.MethodGet, p, "", ""))
		}
		// The proxied pages: every lure target is linked from some page sooner or later.
		var lures strings.Builder
		for range 40 {
			lures.WriteString(read(http.MethodGet, "/", "", ""))
		}
		check("the proxied pages", lures.String())
		if !strings.Contains(lures.String(), "?ref=") {
			t.Fatalf("the proxied pages carry no lure:\n%s", lures.String())
		}
		if !strings.Contains(lures.String(), ">Partner onboarding guide</a>") && !strings.Contains(lures.String(), "/docs/partners/onboarding?ref=") {
			t.Errorf("no lure links the titled page in 40 pages")
		}
		if !strings.Contains(read(http.MethodGet, titled.path, "", ""), "Partner onboarding guide") {
			t.Errorf("the page does not show its public title")
		}
		if strings.HasPrefix(strings.SplitN(seen["llms_txt"], "\n\n", 2)[1], "# My ") {
			t.Errorf("llms.txt is headed by a trap's name")
		}
	})
}
