package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ent/schematype"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

const (
	browserGroup = "real browser (Chromium)"
	browserHow   = "run `bash scripts/install-chromium.sh` (Chromium, node, tests/browser/node_modules; CI does)"
)

// sampleSite is a small shop with a stylesheet, a header and visible links: what a person browses.
func sampleSite() http.Handler {
	const layout = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%[1]s · Example Shop</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/site.css"></head>
<body><header><a href="/" class="logo">Example Shop</a><nav><a href="/">Home</a> <a href="/about">About us</a></nav></header>
<main><h1>%[1]s</h1>%[2]s</main>
<footer>© 2026 Example Shop · <a href="/about">About us</a></footer>
</body></html>
`
	mux := http.NewServeMux()
	mux.HandleFunc("/site.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		_, _ = io.WriteString(w, `body{margin:0;font:16px/1.5 sans-serif;color:#222;background:#fafafa}
header{display:flex;justify-content:space-between;padding:16px 32px;background:#234;color:#fff}
header a{color:#fff;margin-left:16px}main{padding:32px;min-height:400px}footer{padding:16px 32px;border-top:1px solid #ddd}
.card{display:inline-block;width:200px;height:120px;margin:8px;background:#e8eef4;border-radius:8px}`)
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, layout, "Welcome", `<p>Hand-made goods, shipped worldwide.</p><div class="card"></div><div class="card"></div><div class="card"></div>`)
	})
	mux.HandleFunc("/about", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, layout, "About us", `<p>A small team since 2009.</p>`)
	})
	// An article, as reader modes want one.
	mux.HandleFunc("/journal/care", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, layout, "Caring for hand-made ceramics", `<article>`+
			strings.Repeat(`<p>Glazed stoneware goes in the dishwasher, but a gentle hand wash keeps the glaze bright for decades. Avoid sudden changes of temperature: a cold mug filled with boiling water can crack along the glaze.</p>`, 6)+
			`</article>`)
	})
	// Markup that hides a </body> or a </p> in every tokenizer state that matters.
	mux.HandleFunc("/tricky", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, layout, "Tricky </body> title", `<form><textarea rows="2" cols="40">a </body> and a </p> in a textarea</textarea>`+
			`<input value="</body><p>x</p>" size="30"></form><template><p>t</p></body></template>`+
			`<svg width="40" height="20"><title></body></title><rect width="40" height="20" fill="#9ab"/></svg>`+
			`<p title="</p></body>">A paragraph after all of them.</p>`)
	})
	// Author style sheets that would un-hide a lure, each on the same page.
	mux.HandleFunc("/hostile/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.PathValue("n"))
		if err != nil || n < 0 || n >= len(hostileCSS) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		page := fmt.Sprintf(layout, "Welcome", `<p>Hand-made goods, <a href="/about">shipped</a> worldwide.</p><div class="card"></div>`)
		_, _ = io.WriteString(w, strings.Replace(page, "</head>", "<style>"+hostileCSS[n]+"</style></head>", 1))
	})
	// A strict Content-Security-Policy: no inline style, no inline script.
	mux.HandleFunc("/csp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'")
		fmt.Fprintf(w, layout, "Strict policy", `<p>No inline style or script runs here.</p>`)
	})
	return mux
}

// hostileCSS are author style sheets that show hidden things, or move and resize every
// element: a lure must stay invisible under each (tests/browser/proxy).
var hostileCSS = []string{
	`body>div{display:flex}`,
	`*{all:unset}`,
	`[hidden]{display:block!important}[aria-hidden]{display:block!important}`,
	`a{position:static!important;clip:auto!important;clip-path:none!important;width:auto!important;height:auto!important;overflow:visible!important}`,
	`div,a,span{display:block!important;position:relative!important;width:600px!important;height:60px!important;margin:0!important;font-size:40px!important;opacity:1!important;visibility:visible!important;clip-path:none!important;overflow:visible!important;white-space:normal!important}`,
	`@layer reset{a,div{position:static!important;clip:auto!important;clip-path:none!important;all:revert!important}}`,
	`main p>a,body>div,body>a{position:fixed!important;inset:0!important;background:red!important;z-index:99999!important}`,
	`*{min-width:100px!important;min-height:40px!important;transform:translateX(3000px)}`,
	`a::after{content:"LINK";position:fixed;top:0;left:0;font-size:80px;background:yellow}div::before{content:"DIV";position:fixed;bottom:0;font-size:80px}`,
	`body{display:grid;grid-template-columns:1fr 1fr}body>*{outline:3px solid blue}`,
	`body{columns:3}`,
	`*{animation:show 1s infinite}@keyframes show{from{clip-path:none;position:static;width:500px;height:500px}}`,
}

// TestBrowserProxy runs tests/browser/proxy (node --test) against Flytrap in front of a
// sample site: a person in Chromium sees the site unchanged and is not recorded; an
// agent that follows the hidden instruction is caught as AI_AGENT.
func TestBrowserProxy(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		ft.Skip(t, browserGroup, browserHow, chromium+" is missing")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		ft.Skip(t, browserGroup, browserHow, "node is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "tests", "browser", "node_modules", "playwright-core")); err != nil {
		ft.Skip(t, browserGroup, browserHow, "tests/browser/node_modules is missing")
	}
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		site := httptest.NewServer(sampleSite())
		defer site.Close()
		u, _ := url.Parse(site.URL)
		env := ft.Start(t, b, func(c *server.Config) { c.Proxy.Upstream = u })
		tn := env.Tenant("shop")
		env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Supplier price list", type: page, path:"/internal/docs/suppliers"}) { id } }`, nil)
		// Three lures a page: the third is the instruction the agent carries out.
		if err := env.DB.Client.Site.UpdateOneID(tn.Site.ID).SetLures(&schematype.LureConfig{Rate: 1, Count: 3}).Exec(ft.System()); err != nil {
			t.Fatal(err)
		}
		env.Server.Engine().InvalidateRoutes()

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "--test-timeout=90000", filepath.Join(root, "tests", "browser", "proxy", "proxy.test.mjs"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"APP_URL="+site.URL,
			"PROXY_URL="+env.Trap.URL,
			"API_URL="+env.HTTP.URL,
			"API_KEY="+tn.ReadOnly,
			"HOSTILE_COUNT="+strconv.Itoa(len(hostileCSS)),
		)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("node --test tests/browser/proxy: %v\n%s", err, out.String())
		}
		t.Logf("node --test tests/browser/proxy:\n%s", out.String())
		// The Go side agrees: two sessions, the agent's (AI_AGENT) and the person's who
		// clicked a lure the page showed (HUMAN).
		d := env.MustGraphQL(tn.ReadOnly, `{ sessions { edges { node { classification userAgent } } } }`, nil)
		edges, _ := ft.Dig(d, "sessions", "edges").([]any)
		classes := map[any]int{}
		for _, e := range edges {
			classes[ft.Dig(e, "node", "classification")]++
		}
		if len(edges) != 2 || classes["AI_AGENT"] != 1 || classes["HUMAN"] != 1 {
			t.Errorf("sessions %v, want the agent's (AI_AGENT) and the clicking person's (HUMAN)", edges)
		}
	})
}

// TestProxyPipelines runs tests/pipelines/proxy (node --test) against Flytrap in front of
// the sample site, three lures a page: the proxy's rows of the pipeline survival matrix
// (docs/detection.md). It fails when a lure placement reaches no pipeline, a pipeline
// keeps no placement, or the matrix differs from the docs' (UPDATE_MATRIX=1 rewrites it).
func TestProxyPipelines(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		ft.Skip(t, browserGroup, browserHow, chromium+" is missing")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		ft.Skip(t, browserGroup, browserHow, "node is not installed")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"playwright-core", "turndown", "@mozilla/readability"} {
		if _, err := os.Stat(filepath.Join(root, "tests", "pipelines", "node_modules", pkg)); err != nil {
			ft.Skip(t, browserGroup, "run `npm ci --prefix tests/pipelines` (make pipelines does)", "tests/pipelines/node_modules/"+pkg+" is missing")
		}
	}
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		site := httptest.NewServer(sampleSite())
		defer site.Close()
		u, _ := url.Parse(site.URL)
		env := ft.Start(t, b, func(c *server.Config) { c.Proxy.Upstream = u })
		tn := env.Tenant("shop")
		env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input:{name:"Supplier price list", type: page, path:"/internal/docs/suppliers"}) { id } }`, nil)
		if err := env.DB.Client.Site.UpdateOneID(tn.Site.ID).SetLures(&schematype.LureConfig{Rate: 1, Count: 3}).Exec(ft.System()); err != nil {
			t.Fatal(err)
		}
		env.Server.Engine().InvalidateRoutes()

		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "--test", "--test-timeout=150000", filepath.Join(root, "tests", "pipelines", "proxy", "proxy.test.mjs"))
		cmd.Dir = root
		cmd.Env = append(os.Environ(),
			"APP_URL="+site.URL,
			"PROXY_URL="+env.Trap.URL,
			"API_URL="+env.HTTP.URL,
			"API_KEY="+tn.ReadOnly,
		)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("node --test tests/pipelines/proxy: %v\n%s", err, out.String())
		}
		t.Logf("node --test tests/pipelines/proxy:\n%s", out.String())
	})
}
