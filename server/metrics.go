package server

import (
	"context"
	"crypto/subtle"
	"github.com/flytrap/flytrap/crawler"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/counter"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/tally"
	"github.com/flytrap/flytrap/webhook"
)

// metrics is one instance's Prometheus registry (never the global one: tests run many
// servers in one process) and the collectors the request path and the hooks feed.
type metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	requestTime  *prometheus.HistogramVec
	batchSize    prometheus.Histogram
	batchTime    prometheus.Histogram
	batchErrors  prometheus.Counter
	events       *prometheus.CounterVec
	attempts     *prometheus.CounterVec
	deliveryLag  prometheus.Histogram
	attemptTime  prometheus.Histogram
	sessionsDesc *prometheus.Desc
}

// newMetrics registers the instance's metrics and plugs the small hooks of the trap writer,
// the webhook dispatcher and the event log into them.
func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := promauto.With(m.reg)
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	hits := func(name, help string, pick func(received, recorded, shed int64) int64) {
		f.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			return float64(pick(s.engine.Counts()))
		})
	}
	hits("flytrap_hits_received_total", "Hits the trap listener offered to the writer's queue.",
		func(r, _, _ int64) int64 { return r })
	hits("flytrap_hits_recorded_total", "Hits made durable by the writer.",
		func(_, r, _ int64) int64 { return r })
	hits("flytrap_hits_shed_total", "Hits refused with 503 because the writer's queue was full.",
		func(_, _, s int64) int64 { return s })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flytrap_hit_queue_depth", Help: "Hits waiting for the writer.",
	}, func() float64 { return float64(s.engine.QueueDepth()) })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flytrap_hit_queue_capacity", Help: "Hits that may wait for the writer (--hit-queue).",
	}, func() float64 { return float64(s.cfg.Trap.QueueSize) })
	journal := func(name, help string, gauge bool, pick func(bytes, replayed int64) int64) {
		get := func() float64 { return float64(pick(s.engine.JournalStats())) }
		if gauge {
			f.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, get)
			return
		}
		f.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, get)
	}
	journal("flytrap_hit_journal_bytes", "Bytes of the hit journal on disk (--hit-journal-max bounds them).", true,
		func(b, _ int64) int64 { return b })
	journal("flytrap_hit_journal_replayed_total", "Hits applied at start from the journal of an earlier run.", false,
		func(_, r int64) int64 { return r })
	m.batchSize = f.NewHistogram(prometheus.HistogramOpts{
		Name: "flytrap_writer_batch_hits", Help: "Hits per writer transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 … 1024
	})
	m.batchTime = f.NewHistogram(prometheus.HistogramOpts{
		Name: "flytrap_writer_commit_duration_seconds", Help: "Time of one writer transaction, begin to commit.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14), // 0.5 ms … 4 s
	})
	m.batchErrors = f.NewCounter(prometheus.CounterOpts{
		Name: "flytrap_writer_batch_errors_total", Help: "Writer transactions that failed (a failed batch is retried hit by hit).",
	})
	s.engine.Observe(func(hits int, took time.Duration, err error) {
		m.batchSize.Observe(float64(hits))
		m.batchTime.Observe(took.Seconds())
		if err != nil {
			m.batchErrors.Inc()
		}
	})

	m.sessionsDesc = prometheus.NewDesc("flytrap_sessions", "Sessions stored, by classification, all organizations "+
		"(read at most once per --metrics-sessions-refresh).", []string{"classification"}, nil)
	m.reg.MustRegister(&sessionGauge{desc: m.sessionsDesc, client: s.db.Client, every: s.cfg.MetricsSessionsRefresh, now: time.Now})

	m.events = f.NewCounterVec(prometheus.CounterOpts{
		Name: "flytrap_events_appended_total", Help: "Events committed to the event log by this instance, by type.",
	}, []string{"type"})
	for _, t := range event.Types {
		m.events.WithLabelValues(t)
	}

	m.attempts = f.NewCounterVec(prometheus.CounterOpts{
		Name: "flytrap_webhook_attempts_total", Help: "Webhook delivery attempts by outcome: success (2xx), http_error (other answers), error (no answer).",
	}, []string{"outcome"})
	for _, o := range []string{webhook.OutcomeSuccess, webhook.OutcomeHTTPError, webhook.OutcomeError} {
		m.attempts.WithLabelValues(o)
	}
	m.deliveryLag = f.NewHistogram(prometheus.HistogramOpts{
		Name: "flytrap_webhook_delivery_lag_seconds", Help: "How long a webhook delivery had been due when its attempt began.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
	})
	m.attemptTime = f.NewHistogram(prometheus.HistogramOpts{
		Name: "flytrap_webhook_attempt_duration_seconds", Help: "Time of one webhook attempt, connection to last byte.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30},
	})
	s.webhooks.Observe(func(outcome string, lag, took time.Duration) {
		m.attempts.WithLabelValues(outcome).Inc()
		m.deliveryLag.Observe(lag.Seconds())
		m.attemptTime.Observe(took.Seconds())
	})

	m.reg.MustRegister(&rangesCollector{r: s.ranges, now: time.Now,
		age:     prometheus.NewDesc("flytrap_crawler_ranges_age_seconds", "Age of each crawler range list in effect: since its last good fetch, or since the embedded snapshot's date.", []string{"list"}, nil),
		stale:   prometheus.NewDesc("flytrap_crawler_ranges_stale", "1 when a crawler range list is stale: refresh on, and not fetched good for --crawler-ranges-refresh × 3, or never (still the embedded copy).", []string{"list"}, nil),
		fetched: prometheus.NewDesc("flytrap_crawler_ranges_fetched", "1 when a crawler range list in effect came from its operator (this run or a stored earlier one), 0 for the embedded snapshot.", []string{"list"}, nil),
	})
	dnsStat := func(name, help string, gauge bool, pick func(crawler.DNSStats) int64) {
		get := func() float64 { return float64(pick(s.crawlers.Stats())) }
		if gauge {
			f.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, get)
			return
		}
		f.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, get)
	}
	dnsStat("flytrap_crawler_dns_lookups_total", "Forward-confirmed reverse DNS lookups of claimed crawlers started.", false,
		func(st crawler.DNSStats) int64 { return st.Lookups })
	dnsStat("flytrap_crawler_dns_busy_total", "Claimed crawlers not looked up because --crawler-dns-concurrency lookups were in flight.", false,
		func(st crawler.DNSStats) int64 { return st.Busy })
	dnsStat("flytrap_crawler_dns_cache_hits_total", "Claimed crawlers answered from the cache (or a lookup in flight).", false,
		func(st crawler.DNSStats) int64 { return st.CacheHits })
	dnsStat("flytrap_crawler_dns_cache_entries", "Reverse DNS answers cached (at most --crawler-dns-cache).", true,
		func(st crawler.DNSStats) int64 { return int64(st.Cached) })

	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flytrap_sse_streams_open", Help: "Open event streams (GET /api/v1/events/stream) on this instance.",
	}, func() float64 { return float64(s.app.OpenFollows(app.FollowStream)) })
	f.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flytrap_graphql_subscriptions_open", Help: "Open GraphQL subscriptions (WebSocket) on this instance.",
	}, func() float64 { return float64(s.app.OpenFollows(app.FollowSubscription)) })

	m.requests = f.NewCounterVec(prometheus.CounterOpts{
		Name: "flytrap_api_requests_total", Help: "API requests by route pattern, method and status.",
	}, []string{"route", "method", "status"})
	m.requestTime = f.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flytrap_api_request_duration_seconds", Help: "API request latency by route pattern and method (streams and WebSockets excluded).",
		Buckets: prometheus.DefBuckets,
	}, []string{"route", "method"})
	return m
}

// request counts one API request. route is the mux pattern (never the raw path: scanners
// would make a label per URL) and method one of a fixed set, so labels stay bounded.
func (m *metrics) request(route, method string, status int, took time.Duration, long bool) {
	method = metricMethod(method)
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	if !long {
		m.requestTime.WithLabelValues(route, method).Observe(took.Seconds())
	}
}

func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// handler serves the registry; with a token, only to a caller presenting it as a bearer token.
func (s *Server) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	want := []byte("Bearer " + s.cfg.MetricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.MetricsToken != "" {
			if s.fails.Blocked(w, r) {
				restError(w, http.StatusTooManyRequests, "too many failed authentications from this address; retry after the time in Retry-After")
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				s.fails.Failed(r)
				w.Header().Set("WWW-Authenticate", `Bearer realm="flytrap-metrics"`)
				restError(w, http.StatusUnauthorized, "a valid metrics token is required (Authorization: Bearer <metrics-token>)")
				return
			}
			s.gate.Authenticated(r.Context())
		}
		h.ServeHTTP(w, r)
	})
}

// sessionGauge reports sessions by classification from one GROUP BY over the sessions
// table, kept for a while: a scrape never costs more than one count per refresh interval,
// and concurrent scrapes share it.
type sessionGauge struct {
	desc   *prometheus.Desc
	client *ent.Client
	every  time.Duration
	now    func() time.Time

	refresh sync.Mutex // held while counting
	mu      sync.Mutex
	counts  map[string]int
	at      time.Time
}

func (g *sessionGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *sessionGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	stale := g.counts == nil || g.now().Sub(g.at) >= g.every
	g.mu.Unlock()
	if stale && g.refresh.TryLock() { // another scrape counting: serve what is there
		g.count()
		g.refresh.Unlock()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.counts == nil {
		return // never counted: no sample rather than a false zero
	}
	for _, c := range classifications {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(g.counts[string(c)]), string(c))
	}
}

// classifications are every session class, so each has a sample (0 when none).
var classifications = []session.Classification{
	session.ClassificationHUMAN, session.ClassificationBOT, session.ClassificationCRAWLER, session.ClassificationAI_CRAWLER,
	session.ClassificationAI_ASSISTANT, session.ClassificationAI_AGENT, session.ClassificationAI_AGENT_MALICIOUS,
	session.ClassificationSCANNER,
}

func (g *sessionGauge) count() {
	ctx, cancel := context.WithTimeout(privacy.DecisionContext(context.Background(), privacy.Allow), 10*time.Second)
	defer cancel()
	// The session counters (tally: exact, kept in the writer's transactions, shared by every
	// instance): at most 32 rows per organization, where a GROUP BY over the sessions read
	// every stored session (a million index entries a minute at 1M).
	rows, err := g.client.Counter.Query().Where(counter.NameHasPrefix("sessions/")).All(ctx)
	if err != nil {
		return // the last counts stay, aging
	}
	counts := make(map[string]int, len(classifications))
	for _, r := range rows {
		if _, class, ok := tally.ParseSessionsName(r.Name); ok {
			counts[class] += int(r.Value)
		}
	}
	g.mu.Lock()
	g.counts, g.at = counts, g.now()
	g.mu.Unlock()
}

// eventsHook counts events after they commit (registered in server/hooks.go).
func (m *metrics) eventsHook() ent.Hook {
	return event.AfterCommit(ent.OpCreate, func(_ context.Context, mu ent.Mutation) {
		if em, ok := mu.(*ent.EventMutation); ok {
			if t, ok := em.GetType(); ok {
				m.events.WithLabelValues(t).Inc() // our own constants: a bounded set
			}
		}
	})
}

// rangesCollector reports each crawler range list's age and staleness at scrape time.
type rangesCollector struct {
	r                   *crawler.Refresher
	now                 func() time.Time
	age, stale, fetched *prometheus.Desc
}

func (c *rangesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.age
	ch <- c.stale
	ch <- c.fetched
}

func (c *rangesCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, st := range c.r.Status() {
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, st.Age(now).Seconds(), st.Name)
		ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, b(st.Stale), st.Name)
		ch <- prometheus.MustNewConstMetric(c.fetched, prometheus.GaugeValue, b(st.Source != "embedded"), st.Name)
	}
}
