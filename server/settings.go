package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/settings"
)

// The README tables the serve settings are listed in.
const (
	tableServe     = "serve"
	tableDashboard = "dashboard"
)

//go:generate go run ../internal/settingsdoc -readme ../README.md

// Settings declares every serve setting over c's fields, in the order the README lists
// them: the one place a setting's flag, variable, default, help and validation are written.
func (c *Config) Settings() *settings.Set {
	s := &settings.Set{}
	s.Table(tableServe)
	c.declareListeners(s)
	declareDB(s, &c.DB)
	c.declareAPI(s)
	c.JWT.Declare(s)
	c.declareWebhooks(s)
	c.declareMetrics(s)
	c.declareStorage(s)
	c.declareBulkheads(s)
	c.declareCost(s)
	c.declareProxy(s)
	s.Table(tableDashboard)
	c.declareDashboard(s)
	return s
}

// declareDB declares --db, which every command takes.
func declareDB(s *settings.Set, dst *string) {
	s.String(dst, "db", "flytrap.db", "database: a SQLite file (or sqlite:PATH) or a postgres:// URL").
		Doc("Database: a SQLite file (or `sqlite:PATH`) or a `postgres://` URL").
		Valid(func(v string) bool { return v != "" }, "must not be empty")
}

func (c *Config) declareListeners(s *settings.Set) {
	s.String(&c.APIAddr, "api-addr", "127.0.0.1:8080", "address of the API listener: GraphQL, REST, dashboard").
		Valid(func(v string) bool { return v != "" }, "must not be empty")
	s.String(&c.TrapAddr, "trap-addr", "127.0.0.1:8081", "address of the trap listener: the decoys visitors see").
		Doc("Address of the trap listener: the decoys visitors see (put it on the public side)")
	s.Rule(func() error {
		if c.TrapAddr == "" || (c.TrapAddr == c.APIAddr && !strings.HasSuffix(c.TrapAddr, ":0")) {
			return errors.New("trap-addr: must be set and differ from api-addr")
		}
		return nil
	})
	// Declared here, not by trap: the trap listener and the lure proxy believe the same proxies.
	s.Func("trusted-proxies", "", "comma-separated CIDRs of proxies in front of the trap listener whose X-Forwarded-For is believed", func(v string) error {
		ps, err := settings.ParsePrefixes(v)
		c.Trap.TrustedProxies = ps
		return err
	}).
		Doc("Comma-separated CIDRs of proxies in front of the trap listener whose `X-Forwarded-For` is believed").DefaultDoc("none")
	c.Proxy.DeclareUpstream(s)
	c.Trap.Declare(s)
	c.TrapTLS.Declare(s)
	c.Crawler.Declare(s)
}

func (c *Config) declareAPI(s *settings.Set) {
	s.String(&c.LogFormat, "log-format", "auto", "log format: auto (text on a terminal, JSON otherwise), text or json").
		Doc("`auto` (text on a terminal, JSON otherwise), `text` or `json`; logs go to stderr").
		Check(func() error {
			switch c.LogFormat {
			case "auto", "text", "json":
				return nil
			}
			return fmt.Errorf("log-format: %q is not auto, text or json", c.LogFormat)
		})
	s.String(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error").
		Doc("`debug`, `info`, `warn` or `error`")
	c.Limits.Declare(s)
	s.Func("allowed-origins", "", "comma-separated origins allowed to open GraphQL WebSockets besides the API's own", func(v string) error {
		c.AllowedOrigins = settings.SplitList(v)
		return nil
	}).
		DefaultDoc("none")
	s.Int64(&c.MaxBodyBytes, "max-body-bytes", 1<<20, "largest API request body; larger ones get 413").
		Doc("Largest API request body; larger ones get 413 (at least 1024)").DefaultDoc("`1048576` (1 MiB)").Min(1024)
	s.Duration(&c.LastUsedInterval, "last-used-interval", 30*time.Second, "how often API keys' last_used_at is written").
		Doc("How often API keys' `last_used_at` is written (at least 1s)").Min(time.Second)
	s.Duration(&c.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long a graceful stop may take")
	s.Duration(&c.EventPollInterval, "event-poll-interval", time.Second, "how often live delivery re-reads the event log besides the wake-up on commit").
		Doc("How often live delivery re-reads the event log, besides the wake-up on commit (at least 10ms)")
	s.Duration(&c.StreamHeartbeat, "stream-heartbeat", 15*time.Second, "interval of the keep-alives of event streams (comments) and WebSockets (pings)").
		Doc("Interval of the keep-alives of event streams (comments) and WebSockets (pings; a graphql-transport-ws client that misses a pong is dropped) (100ms to 15s)")
	s.Rule(func() error {
		if c.EventPollInterval < 10*time.Millisecond || c.StreamHeartbeat < 100*time.Millisecond || c.StreamHeartbeat > 15*time.Second {
			return errors.New("event-poll-interval must be at least 10ms and stream-heartbeat between 100ms and 15s")
		}
		return nil
	})
	s.Int(&c.MaxStreamsPerOrg, "max-streams-per-org", 50, "open event streams one organization may hold; more get 429").
		Valid(func(v int) bool { return v >= 1 }, "must be positive")
	s.Float64(&c.RateLimit, "rate-limit", 20, "sustained API requests per second per key")
	s.Int(&c.RateBurst, "rate-burst", 200, "API requests a key may make at once before the rate applies")
	s.Rule(func() error {
		if c.RateLimit <= 0 || c.RateBurst < 1 {
			return errors.New("rate-limit and rate-burst: must be positive")
		}
		return nil
	})
	s.Duration(&c.APIReadHeaderTimeout, "api-read-header-timeout", 10*time.Second, "time an API client has to send a request's headers").
		Doc("Time an API client has to send a request's headers (at least 100ms)")
	s.Duration(&c.APIReadTimeout, "api-read-timeout", 30*time.Second, "time an API client has to send a whole request, body included (event streams and WebSockets are not cut by it)").
		Doc("Time an API client has to send a whole request, body included; event streams and WebSockets are not cut by it")
	s.Duration(&c.APIIdleTimeout, "api-idle-timeout", 2*time.Minute, "how long an idle keep-alive API connection stays open")
	s.Rule(func() error {
		if c.APIReadHeaderTimeout < 100*time.Millisecond || c.APIReadTimeout < c.APIReadHeaderTimeout || c.APIIdleTimeout < time.Second {
			return errors.New("api-read-header-timeout must be at least 100ms, api-read-timeout at least as long, api-idle-timeout at least 1s")
		}
		return nil
	})
	s.Int(&c.MaxUnauthConns, "max-unauthenticated-conns", 1024, "API connections that have not authenticated yet, at once; more are closed on accept").
		Valid(func(v int) bool { return v >= 1 }, "must be positive")
	s.Float64(&c.AuthFailureRate, "auth-failure-rate", 1, "failed authentications per second a client address may sustain before it gets 429").
		Doc("Failed authentications per second a client address (IPv6: its /64) may sustain; beyond, 429 with `Retry-After` before its token is looked at")
	s.Int(&c.AuthFailureBurst, "auth-failure-burst", 30, "failed authentications a client address may make at once before auth-failure-rate applies").
		Doc("Failed authentications a client address may make at once before `--auth-failure-rate` applies")
	s.Rule(func() error {
		if c.AuthFailureRate <= 0 || c.AuthFailureBurst < 1 {
			return errors.New("auth-failure-rate and auth-failure-burst: must be positive")
		}
		return nil
	})
	s.Duration(&c.RequestTimeout, "request-timeout", 30*time.Second, "server-side deadline of one API request, past which it gets 503 (event streams and WebSockets are exempt)").
		Doc("Server-side deadline of one API request: past it the answer is 503 (`TIMEOUT`); event streams and WebSockets are exempt").
		Min(100 * time.Millisecond)
}

func (c *Config) declareWebhooks(s *settings.Set) {
	c.Webhook.DeclareNetwork(s)
	s.Float64(&c.WebhookManual.PerMinute, "webhook-manual-rate", app.DefaultManualLimit.PerMinute, "pings and redeliveries a minute one webhook endpoint may be sent; more get 429 / RATE_LIMITED").
		Doc("Pings and redeliveries a minute one webhook endpoint may be sent (above 0, at most 600); more get 429 / `RATE_LIMITED`")
	s.Int(&c.WebhookManual.Burst, "webhook-manual-burst", app.DefaultManualLimit.Burst, "pings and redeliveries one webhook endpoint may be sent at once before webhook-manual-rate applies").
		Doc("Pings and redeliveries one endpoint may be sent at once before the rate applies (1 to 100)")
	s.Rule(func() error {
		if m := c.WebhookManual; m.PerMinute <= 0 || m.PerMinute > 600 || m.Burst < 1 || m.Burst > 100 {
			return errors.New("webhook-manual-rate must be above 0 and at most 600, webhook-manual-burst between 1 and 100")
		}
		return nil
	})
	s.Int(&c.SessionDetailLimit, "session-detail-limit", app.DefaultDetailLimit, "newest hits, signals and prompts a session's detail shows, each (1 to 1000; REST and GraphQL alike)").
		Doc("Newest hits, signals and prompts a session's detail shows, each, oldest first: REST `GET /dashboard/api/sessions/{id}` and GraphQL `sessionDetail` alike (1 to 1000)").
		Valid(func(v int) bool { return v >= 1 && v <= app.MaxDetailLimit },
			fmt.Sprintf("must be between 1 and %d (sessionDetail's GraphQL cost assumes it)", app.MaxDetailLimit))
	c.Webhook.Declare(s)
	s.Func("public-url", "", "the dashboard's external base URL (e.g. https://flytrap.example.com); alerts link to sessions under it; empty: no links", urlFlag(&c.PublicURL)).
		Doc("The dashboard's external base URL (e.g. `https://flytrap.example.com`); Slack, Teams, JSON and Splunk alerts link to the session under it").DefaultDoc("empty (no links)")
}

func (c *Config) declareMetrics(s *settings.Set) {
	s.Bool(&c.Metrics, "metrics", true, "serve Prometheus metrics at /metrics on the API listener").
		Doc("Serve Prometheus metrics at `GET /metrics` on the API listener (`false` turns it off: 404)")
	s.String(&c.MetricsToken, "metrics-token", "", "bearer token /metrics requires; empty: /metrics is open to whoever reaches the API listener").
		Doc("Bearer token `/metrics` requires (16 to 256 printable characters); empty: open to whoever reaches the API listener").DefaultDoc("empty (open)").
		Valid(func(t string) bool {
			return t == "" || (len(t) >= 16 && len(t) <= 256 && !strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r > '~' }))
		}, "must be 16 to 256 printable ASCII characters without spaces")
	s.Duration(&c.MetricsSessionsRefresh, "metrics-sessions-refresh", time.Minute, "how long the sessions-by-classification gauge reuses one count of the sessions table (1s to 1h)").
		Valid(func(v time.Duration) bool { return v >= time.Second && v <= time.Hour }, "must be between 1s and 1h")
}

// declareStorage declares retention (how long each kind of row is kept), partitions, the
// disk-space warning and the garbage collector's floor.
func (c *Config) declareStorage(s *settings.Set) {
	c.Retention.Declare(s)
	s.Bool(&c.PGPartitions, "pg-partitions", true, "PostgreSQL: partition hits and events by day on a new database and create each day's partition ahead (false: plain tables, no partitions made)").
		Doc("PostgreSQL: a new database gets `hits` and `events` partitioned by day, and the service creates each day's partition a week ahead so retention drops whole days; `false` makes plain tables and no partitions. An existing table keeps its layout either way (`flytrap admin partition-hits` and `flytrap admin partition-events` convert one) ([operations](docs/operations.md#hits-partitioned-by-day))")
	s.Int64(&c.DiskLowBytes, "disk-low-bytes", 1<<30, "free space on the SQLite database's file system below which the log warns (0: never)").
		Doc("Free space on the SQLite file's file system below which the log warns, hourly (0: never)").DefaultDoc("`1073741824` (1 GiB)").
		Valid(func(v int64) bool { return v >= 0 }, "must not be negative")
	s.Int64(&c.GCHeapFloorBytes, "gc-heap-floor-bytes", 64<<20, "the heap may grow to this many bytes before Go's garbage collector runs (then to twice the live heap); 0: Go's default. GOGC in the environment wins").
		Doc("The heap may grow to this size before Go's garbage collector runs, then to about twice the live heap (Go's own rule); `0` leaves Go's default. Under a flood of hits it takes the collector from 26 runs a second to 3.5, for about a sixth less CPU per hit ([decisions](docs/decisions.md#a-heap-floor-for-the-garbage-collector)). `GOGC` in the environment wins over it").DefaultDoc("`67108864` (64 MiB)").
		Valid(func(v int64) bool { return v >= 0 && v <= 1<<40 }, "must be 0 (off) to 1 TiB")
}

// declareBulkheads declares the database pools, the API's and the trap listener's, which no
// API caller can take, and the API's slots (docs/security.md, "Bulkheads").
func (c *Config) declareBulkheads(s *settings.Set) {
	s.Int(&c.DBAPIConns, "db-api-conns", 0, "database connections the API may hold at once (GraphQL, REST, streams, webhooks, retention); 0: 16 on PostgreSQL, GOMAXPROCS (at least 4) on SQLite").
		Doc("Database connections the API may hold at once (GraphQL, REST, streams, webhooks, retention). On PostgreSQL each of its statements ends at `--request-timeout` less a tenth ([bulkheads](docs/security.md#bulkheads-the-trap-listeners-own-budget))").DefaultDoc("`0`: 16 on PostgreSQL, GOMAXPROCS (at least 4) on SQLite")
	s.Int(&c.APIConcurrencyLimit, "api-concurrency", 0, "API requests served at once (event streams and idle subscriptions aside); more wait for a slot until their deadline; 0: GOMAXPROCS less one, at least 1, so the trap listener keeps a core").
		Doc("API requests (GraphQL over HTTP, REST) served at once; more wait for a slot until their deadline, so API work leaves the trap listener a core ([bulkheads](docs/security.md#bulkheads-the-trap-listeners-own-budget))").DefaultDoc("`0`: GOMAXPROCS less one, at least 1")
	s.Int(&c.DBTrapConns, "db-trap-conns", 0, "database connections of the trap listener and the hit writer, which the API never uses; 0: 4").
		Doc("Database connections of the trap listener and the hit writer, which no API caller can take (at least 2)").DefaultDoc("`0`: 4")
	s.Rule(func() error {
		if c.DBAPIConns < 0 || c.DBAPIConns > 1000 || c.DBTrapConns < 0 || c.DBTrapConns > 1000 {
			return errors.New("db-api-conns and db-trap-conns: must be between 0 (the default) and 1000")
		}
		if c.APIConcurrencyLimit < 0 || c.APIConcurrencyLimit > 10000 {
			return errors.New("api-concurrency: must be between 0 (the default) and 10000")
		}
		if c.DBTrapConns == 1 {
			return errors.New("db-trap-conns: must be at least 2 (the writer's transaction and a route reload)")
		}
		return nil
	})
	s.Int(&c.WebsocketMaxOperations, "ws-max-operations", 100, "operations (queries, mutations, subscriptions) one GraphQL WebSocket may run at once; more get RATE_LIMITED (1 to 10000)").
		Doc("Operations (queries, mutations, subscriptions) one GraphQL WebSocket may run at once; more get `RATE_LIMITED` for their id, and a socket that keeps sending after 100 refusals is closed with 4429 (1 to 10000)").
		Between(1, 10000)
}

// declareCost declares what one API request may ask for (docs/security.md, "Filters and
// response bytes").
func (c *Config) declareCost(s *settings.Set) {
	w := graph.DefaultWhereLimits
	s.Int(&c.Where.MaxNodes, "where-max-nodes", w.MaxNodes, "predicates, list items and nesting levels in all the where filters of one GraphQL operation (10 to 1000)").
		Doc("Predicates, list items and nesting levels in all the `where` filters of one GraphQL operation, aliases added up (10 to 1000); over it: `COMPLEXITY_LIMIT_EXCEEDED` ([security](docs/security.md#filters-and-response-bytes))").
		Between(10, 1000)
	s.Int(&c.Where.MaxWidth, "where-max-width", w.MaxWidth, "items in one and, or or hasXWith list of a where filter (2 to 100)").
		Doc("Items in one `and`, `or` or `hasXWith` list of a `where` filter (2 to 100)").
		Between(2, 100)
	s.Int(&c.Where.MaxScans, "where-max-scans", w.MaxScans, "substring, prefix, suffix and case-folded predicates on any text field (and any on a hit body or prompt text) in one request, counted once per row of the pages they filter (0 to 20)").
		Doc("Substring, prefix, suffix and case-folded predicates on any text field (a session's user agent, a signal's detail, a trap's name…) and any predicate on a hit's `body` or a prompt's `text`) in one request, counted once per row of the pages they filter (0 to 20)").
		Between(0, 20)
	s.Int(&c.SessionDetailBytes, "session-detail-bytes", app.DefaultDetailBytes, "stored bytes of each list (hits, signals, prompts) of a session's detail, newest first (64 KiB to 8 MiB; REST and GraphQL alike)").
		Doc("Stored text of each list (hits, signals, prompts) of a session's detail: the newest items that fit, `hitsTruncated` / `hits_truncated` (and the signals' and prompts') say there are more; REST and GraphQL alike (64 KiB to 8 MiB). GraphQL prices the detail by it").DefaultDoc("`1048576` (1 MiB)").
		Between(app.MinDetailBytes, app.MaxDetailBytes)
}

// declareProxy declares the trap listener's connections and the lure proxy's bounds toward
// visitors and the upstream (docs/security.md, "The lure proxy").
func (c *Config) declareProxy(s *settings.Set) {
	s.Int(&c.TrapMaxConns, "trap-max-conns", 0, "trap listener connections open at once; at the cap a new one replaces an idle keep-alive connection or is closed; 0: half the process's open-file limit (64 to 16384)").
		Doc("Trap listener connections open at once; at the cap a new connection replaces an idle keep-alive one, or is closed on accept ([security](docs/security.md#the-lure-proxy---upstream))").DefaultDoc("`0`: half the open-file limit (64 to 16384)").
		Valid(func(v int) bool { return v >= 0 && v <= 1<<20 }, "must be 0 (half the open-file limit) to 1048576")
	c.Proxy.Declare(s)
}

// declareDashboard declares what the dashboard is told at /dashboard/config.json (web.go).
func (c *Config) declareDashboard(s *settings.Set) {
	s.Func("trap-public-url", "", "the trap listener's public base URL, shown by the dashboard (default http://<trap-addr>, https:// with TLS on)", urlFlag(&c.TrapPublicURL)).
		Doc("The trap listener's public base URL, used for trap links and previews (an unspecified host such as `0.0.0.0` is replaced by the host the browser used)").DefaultDoc("`http://<trap-addr>` (`https://` with TLS on)")
	s.Func("oidc-issuer", "", "identity provider's issuer URL for the dashboard's sign-in (Authorization Code + PKCE); empty: API keys only", urlFlag(&c.OIDC.Issuer)).
		Doc("Identity provider's issuer URL; its origin is added to the CSP's `connect-src` (discovery and token endpoint)").DefaultDoc("empty (API keys only)")
	s.String(&c.OIDC.ClientID, "oidc-client-id", "", "the dashboard's OIDC client id (a public client: no secret)").
		Doc("The dashboard's client id: a **public** client (no secret), with `<dashboard URL>/auth/callback` as redirect URI and `<dashboard URL>/` as post-logout redirect URI")
	s.String(&c.OIDC.Scopes, "oidc-scopes", defaultOIDCScopes, "scopes the dashboard asks the identity provider for").
		Doc("Scopes requested at sign-in")
	s.Func("oidc-token", "", "JWT the dashboard sends to the API after OIDC sign-in: access_token (default) or id_token", oidcTokenFlag(&c.OIDC.Token)).
		Doc("Which JWT the dashboard sends to the API: the access token (the id token is used when the access token is opaque) or `id_token`").DefaultDoc("`access_token`")
}
