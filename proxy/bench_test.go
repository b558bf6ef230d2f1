package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/trap"
)

// BenchmarkProxy compares Flytrap's proxy with a bare httputil.ReverseProxy in front of
// the same application, driven by the same client: a JSON answer (passed untouched)
// and a 20 KB HTML page (two lures inserted). Its requests/s are reported as req/s;
// docs/benchmarks.md has the figures and the command.
func BenchmarkProxy(b *testing.B) {
	html := "<!DOCTYPE html><html><head><title>Shop</title></head><body>" +
		strings.Repeat("<p class=\"item\">A hand-made product, described at some length for the page to weigh what a real one does.</p>\n", 200) +
		"</body></html>\n"
	const json = `{"items":[{"id":1,"name":"mug","price":12.5},{"id":2,"name":"bowl","price":18}],"total":2}`
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, html)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, json)
	}))
	defer app.Close()
	u, _ := url.Parse(app.URL)

	env := ft.Start(b, ft.Backends()[0], func(c *server.Config) { c.Proxy.Upstream = u })
	tn := env.Tenant("shop")
	env.MustGraphQL(tn.ReadWrite, `mutation { createTrap(input: {name: "Runbook", type: page, path: "/internal/docs/runbook"}) { id } }`, nil)

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.DisableCompression = 512, 256, true
	// The baseline: httputil.ReverseProxy as its documentation shows it, with the same
	// transport settings (connections kept per host) as Flytrap's, and the trap listener's
	// own http.Server (timeouts, header limit, the nginx disguise of its listener).
	bare := httptest.NewUnstartedServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.Out.Host = pr.In.Host; pr.SetXForwarded() },
		Transport: tr,
	})
	srv := env.Server.TrapServer()
	srv.Handler = bare.Config.Handler
	bare.Config = srv
	bare.Listener = trap.WrapListener(bare.Listener)
	bare.Start()
	defer bare.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, DisableCompression: true}}
	// Rounds alternate the two proxies, so a neighbour's load on the shared machine falls
	// on both alike; compare the medians (benchstat, or by eye).
	for range 3 {
		for _, kind := range []struct{ name, path, want string }{{"json", "/api/items", `"total":2`}, {"html", "/page", "?ref="}} {
			for _, p := range []struct{ name, base string }{{"bare", bare.URL}, {"flytrap", env.Trap.URL}} {
				b.Run(kind.name+"/"+p.name, func(b *testing.B) {
					target := p.base + kind.path
					check := kind.want
					if p.name == "bare" && kind.name == "html" {
						check = "</body>"
					}
					b.SetParallelism(8)
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							res, err := client.Get(target)
							if err != nil {
								b.Error(err)
								return
							}
							body, err := io.ReadAll(res.Body)
							res.Body.Close()
							if err != nil || res.StatusCode != 200 || !strings.Contains(string(body), check) {
								b.Errorf("%s: %d %v", target, res.StatusCode, err)
								return
							}
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
				})
			}
		}
	}
}
