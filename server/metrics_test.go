package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flytrap/flytrap/decoy"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

// scrape reads /metrics with the Prometheus text parser.
func scrape(t *testing.T, env *ft.Env, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := env.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET /metrics: %d %s", res.StatusCode, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample is the value of the sample of name whose labels include want (a counter, gauge,
// or a histogram's count); -1 when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// The counters move after real hits on the trap listener, a webhook attempt, an event
// stream, a subscription and API requests; route labels are patterns, never raw paths.
func TestMetrics(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, func(c *server.Config) {
			c.Webhook.AllowPrivate = true
			c.Webhook.Poll = 20 * time.Millisecond
			c.MetricsSessionsRefresh = time.Second
		})
		a := env.Tenant("acme")
		var received atomic.Int64
		hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			received.Add(1)
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(hook.Close)
		env.MustGraphQL(a.ReadWrite, `mutation($in: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $in) { secret } }`,
			map[string]any{"in": map[string]any{"url": hook.URL, "eventTypes": []string{"threat.*"}}})
		env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Docs", type: page, path:"/internal/docs"}) { id } }`, nil)

		before := scrape(t, env, "")
		for _, name := range []string{"flytrap_hits_received_total", "flytrap_hits_recorded_total", "flytrap_hits_shed_total",
			"flytrap_hit_queue_depth", "flytrap_writer_batch_hits", "flytrap_writer_commit_duration_seconds",
			"flytrap_webhook_delivery_lag_seconds", "flytrap_sse_streams_open", "flytrap_graphql_subscriptions_open", "flytrap_sessions",
			"go_goroutines"} {
			if before[name] == nil {
				t.Errorf("no %s", name)
			}
		}
		if v := sample(before, "flytrap_webhook_attempts_total", map[string]string{"outcome": "success"}); v != 0 {
			t.Errorf("webhook attempts before any: %v", v)
		}

		// Live readers are counted while open.
		openSSE(t, env, a.ReadOnly)
		ws := subscribeWS(t, env, a.ReadOnly, `subscription { threatDetected { id } }`, nil)
		waitSubscribers(t, env, 2)
		open := scrape(t, env, "")
		if sample(open, "flytrap_sse_streams_open", nil) != 1 || sample(open, "flytrap_graphql_subscriptions_open", nil) != 1 {
			t.Fatalf("open streams %v, subscriptions %v; want 1 and 1",
				sample(open, "flytrap_sse_streams_open", nil), sample(open, "flytrap_graphql_subscriptions_open", nil))
		}

		// A regex crawler on the trap listener: a page, then its hidden URLs; it becomes a BOT threat.
		get := func(path string) string {
			req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
			req.Header.Set("User-Agent", "python-requests/2.32.3")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return string(b)
		}
		hits := 1
		page := get("/internal/docs")
		for _, u := range decoy.TokenURL.FindAllString(page, -1) {
			get(u)
			hits++
		}
		nextData(t, ws) // the threat is committed
		ws.Close()

		// API requests: a listed route, a route with a parameter, an unknown path.
		for _, p := range []string{"/dashboard/api/sessions", "/dashboard/api/sessions/ses_doesnotexist", "/api/v1/no-such-xyz"} {
			env.Get(a.ReadOnly, p)
		}

		var after map[string]*dto.MetricFamily
		deadline := time.Now().Add(15 * time.Second)
		for {
			after = scrape(t, env, "")
			if sample(after, "flytrap_webhook_attempts_total", map[string]string{"outcome": "success"}) >= 1 &&
				sample(after, "flytrap_sessions", map[string]string{"classification": "BOT"}) >= 1 &&
				sample(after, "flytrap_graphql_subscriptions_open", nil) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("webhook attempts %v (receiver saw %d), BOT sessions %v, subscriptions %v",
					sample(after, "flytrap_webhook_attempts_total", map[string]string{"outcome": "success"}), received.Load(),
					sample(after, "flytrap_sessions", map[string]string{"classification": "BOT"}),
					sample(after, "flytrap_graphql_subscriptions_open", nil))
			}
			time.Sleep(50 * time.Millisecond)
		}
		moved := func(name string, labels map[string]string, by float64) {
			t.Helper()
			was, is := max(sample(before, name, labels), 0), sample(after, name, labels)
			if is-was < by {
				t.Errorf("%s%v went from %v to %v, want at least +%v", name, labels, was, is, by)
			}
		}
		moved("flytrap_hits_received_total", nil, float64(hits))
		moved("flytrap_hits_recorded_total", nil, float64(hits))
		moved("flytrap_writer_batch_hits", nil, 1)
		moved("flytrap_writer_commit_duration_seconds", nil, 1)
		moved("flytrap_events_appended_total", map[string]string{"type": "threat.detected"}, 1)
		moved("flytrap_webhook_delivery_lag_seconds", nil, 1)
		moved("flytrap_api_requests_total", map[string]string{"route": "GET /dashboard/api/sessions", "method": "GET", "status": "200"}, 1)
		moved("flytrap_api_requests_total", map[string]string{"route": "GET /dashboard/api/sessions/{id}"}, 1)
		moved("flytrap_api_request_duration_seconds", map[string]string{"route": "GET /dashboard/api/sessions"}, 1)
		moved("flytrap_api_requests_total", map[string]string{"route": "unmatched", "status": "404"}, 1)
		if v := sample(after, "flytrap_hits_shed_total", nil); v != 0 {
			t.Errorf("%v hits shed", v)
		}
		for _, m := range after["flytrap_api_requests_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.Contains(l.GetValue(), "ses_") || strings.Contains(l.GetValue(), "xyz") {
					t.Errorf("a raw path in a label: %s", l.GetValue())
				}
			}
		}
	})
}

// With a token, /metrics wants it; it can be turned off.
func TestMetricsToken(t *testing.T) {
	const token = "metrics-secret-0123456789"
	env := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.MetricsToken = token })
	for _, h := range []string{"", "Bearer wrong-token-0123456789", "Bearer " + token + "x", token} {
		req, _ := http.NewRequest(http.MethodGet, env.HTTP.URL+"/metrics", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		res, err := env.HTTP.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"success":false`) || strings.Contains(string(body), "flytrap_") {
			t.Errorf("Authorization %q: %d %s", h, res.StatusCode, body)
		}
	}
	if fams := scrape(t, env, token); fams["flytrap_hits_received_total"] == nil {
		t.Error("no metrics with the token")
	}

	off := ft.Start(t, ft.Backends()[0], func(c *server.Config) { c.Metrics = false })
	res, err := off.HTTP.Client().Get(off.HTTP.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics turned off: %d", res.StatusCode)
	}

	bad := server.DefaultConfig()
	bad.MetricsToken = "short"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "metrics-token") {
		t.Errorf("a short token: %v", err)
	}
	bad = server.DefaultConfig()
	bad.MetricsSessionsRefresh = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "metrics-sessions-refresh") {
		t.Errorf("no refresh: %v", err)
	}
}
