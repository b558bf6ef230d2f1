package server

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/proxy"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/trap"
	"github.com/flytrap/flytrap/webhook"
)

// Config is the whole configuration of a Flytrap instance, filled from flags
// and FLYTRAP_* environment variables (flags win), validated once.
type Config struct {
	APIAddr          string
	TrapAddr         string
	Trap             trap.Config
	DB               string
	LogFormat        string // auto, text or json
	LogLevel         string
	Introspection    bool
	AllowedOrigins   []string
	MaxBodyBytes     int64
	ComplexityLimit  int
	DepthLimit       int
	MaxSelections    int // GraphQL selections per document, fragments expanded
	LastUsedInterval time.Duration
	ShutdownTimeout  time.Duration
	JWT              JWTConfig
	Webhook          webhook.Config
	// WebhookManual limits pings and redeliveries per endpoint.
	WebhookManual app.ManualLimit
	// SessionDetailLimit bounds each list of a session's detail (hits, signals, prompts).
	SessionDetailLimit int

	EventPollInterval time.Duration
	StreamHeartbeat   time.Duration
	MaxStreamsPerOrg  int
	RateLimit         float64 // requests per second per credential
	RateBurst         int

	// The API listener's defences against slow and unauthenticated callers (docs/security.md).
	APIReadHeaderTimeout time.Duration
	APIReadTimeout       time.Duration // the whole request, body included
	APIIdleTimeout       time.Duration
	MaxUnauthConns       int     // connections that have not authenticated yet, at once
	AuthFailureRate      float64 // failed authentications per second per client address, sustained
	AuthFailureBurst     int
	RequestTimeout       time.Duration // server-side deadline of one API request (streams and WebSockets exempt)

	// Dashboard (server/web.go): served publicly at /dashboard/config.json.
	TrapPublicURL string // the trap listener's public base URL; empty: http://<trap-addr>
	OIDC          OIDCConfig
	// PublicURL is the dashboard's external base URL, for links in alerts; empty: no links.
	PublicURL string

	// Upstream is the application the trap listener stands in front of (flytrap serve
	// --upstream, package proxy); nil: the listener answers everything itself.
	Upstream *url.URL
	// MaxLureBytes: larger pages from the upstream get no lures (docs/deployment.md).
	MaxLureBytes int64

	// Prometheus metrics at /metrics on the API listener (server/metrics.go).
	Metrics                bool
	MetricsToken           string        // when set, /metrics wants "Authorization: Bearer <token>"
	MetricsSessionsRefresh time.Duration // how long the sessions-by-class counts are reused

	// Retention: how long each kind of row is kept (retention/, docs/operations.md).
	Retention retention.Config
	// DiskLowBytes: below this much free space on the SQLite file's file system, the log warns.
	DiskLowBytes int64
	// GCHeapFloorBytes: the heap may grow to this size before the garbage collector runs
	// (internal/gcfloor); 0 leaves Go's default. GOGC in the environment overrides it.
	GCHeapFloorBytes int64
	// PGPartitions: on PostgreSQL, create hits and events range-partitioned by day on a new database and
	// keep partitions created ahead (store.EnsurePartitions; docs/operations.md).
	PGPartitions bool

	// Bulkheads (server/bulkheads.go): the sizes of the API's and the trap listener's
	// database pools; 0 takes store's defaults. APIConcurrencyLimit: API requests served at
	// once (0: APIConcurrency's default).
	DBAPIConns, DBTrapConns int
	APIConcurrencyLimit     int
	// GraphQL over WebSocket (server/websocket.go, docs/security.md): operations one
	// connection may run at once; more are refused before any work is done for them.
	WebsocketMaxOperations int
	// Cost of what one API request asks for, bounded before it runs (docs/security.md,
	// "Filters and response bytes"): where filters, and the bytes of a session's detail.
	Where graph.WhereLimits
	// SessionDetailBytes bounds the stored bytes of each list of a session's detail.
	SessionDetailBytes int
	// The trap listener's connections and the lure proxy's bounds toward visitors and the
	// upstream (docs/security.md, "The lure proxy").
	TrapMaxConns      int           // trap listener connections open at once; 0: half the open-file limit (trapMaxConns)
	ProxyReadTimeout  time.Duration // longest wait for a visitor's next bytes of a proxied request or WebSocket
	ProxyWriteTimeout time.Duration // longest one write to a visitor of a proxied answer may take
	UpstreamMaxConns  int           // connections to the upstream at once
	UpstreamTimeout   time.Duration // dial, TLS, response headers, and the longest silence of a proxied exchange
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config {
	return Config{
		APIAddr:          "127.0.0.1:8080",
		TrapAddr:         "127.0.0.1:8081",
		Trap:             trap.DefaultConfig(),
		DB:               "flytrap.db",
		LogFormat:        "auto",
		LogLevel:         "info",
		Introspection:    true,
		MaxBodyBytes:     1 << 20,
		ComplexityLimit:  20000,
		DepthLimit:       12,
		MaxSelections:    1000,
		LastUsedInterval: 30 * time.Second,
		ShutdownTimeout:  15 * time.Second,
		JWT:              JWTConfig{OrgClaim: "org_id", ScopeClaim: "scope"},
		Webhook:          webhook.DefaultConfig(),
		WebhookManual:    app.DefaultManualLimit,

		SessionDetailLimit: app.DefaultDetailLimit,

		EventPollInterval: time.Second,
		StreamHeartbeat:   15 * time.Second,
		MaxStreamsPerOrg:  50,
		RateLimit:         20,
		RateBurst:         200,

		APIReadHeaderTimeout: 10 * time.Second,
		APIReadTimeout:       30 * time.Second,
		APIIdleTimeout:       2 * time.Minute,
		MaxUnauthConns:       1024,
		AuthFailureRate:      1,
		AuthFailureBurst:     30,
		RequestTimeout:       30 * time.Second,

		MaxLureBytes:           proxy.DefaultMaxLureBytes,
		Metrics:                true,
		MetricsSessionsRefresh: time.Minute,

		Retention:        retention.DefaultConfig(),
		DiskLowBytes:     1 << 30,
		GCHeapFloorBytes: 64 << 20,
		PGPartitions:     true,

		WebsocketMaxOperations: 100,
		Where:                  graph.DefaultWhereLimits,
		SessionDetailBytes:     app.DefaultDetailBytes,
		ProxyReadTimeout:       proxy.DefaultReadTimeout,
		ProxyWriteTimeout:      proxy.DefaultWriteTimeout,
		UpstreamMaxConns:       proxy.DefaultUpstreamMaxConns,
		UpstreamTimeout:        proxy.DefaultUpstreamTimeout,
	}
}

// Env reads an environment variable; tests replace it.
type Env func(string) string

// EnvName is the environment variable of a flag: --api-addr is FLYTRAP_API_ADDR.
func EnvName(flagName string) string {
	return "FLYTRAP_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// RegisterDB adds --db to fs.
func RegisterDB(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "db", *dst, "database: a SQLite file (or sqlite:PATH) or a postgres:// URL")
}

// Register adds every serve flag to fs, with c's values as defaults.
func (c *Config) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.APIAddr, "api-addr", c.APIAddr, "address of the API listener: GraphQL, REST, dashboard")
	fs.StringVar(&c.TrapAddr, "trap-addr", c.TrapAddr, "address of the trap listener: the decoys visitors see")
	fs.Func("trusted-proxies", "comma-separated CIDRs of proxies in front of the trap listener whose X-Forwarded-For is believed", func(v string) error {
		ps, err := parsePrefixes(v)
		c.Trap.TrustedProxies = ps
		return err
	})
	fs.IntVar(&c.Trap.QueueSize, "hit-queue", c.Trap.QueueSize, "hits that may wait to be written; beyond it the trap listener answers 503")
	fs.IntVar(&c.Trap.BatchSize, "hit-batch", c.Trap.BatchSize, "hits written per transaction at most")
	fs.DurationVar(&c.Trap.SessionIdle, "session-idle", c.Trap.SessionIdle, "idle gap that ends a visitor's session")
	RegisterDB(fs, &c.DB)
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: auto (text on a terminal, JSON otherwise), text or json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn or error")
	fs.BoolVar(&c.Introspection, "introspection", c.Introspection, "allow GraphQL introspection queries")
	fs.Func("allowed-origins", "comma-separated origins allowed to open GraphQL WebSockets besides the API's own", func(s string) error {
		c.AllowedOrigins = splitList(s)
		return nil
	})
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", c.MaxBodyBytes, "largest API request body; larger ones get 413")
	fs.IntVar(&c.ComplexityLimit, "complexity-limit", c.ComplexityLimit, "largest GraphQL query complexity (a connection costs its page size times its fields)")
	fs.IntVar(&c.DepthLimit, "depth-limit", c.DepthLimit, "deepest GraphQL selection nesting")
	fs.IntVar(&c.MaxSelections, "max-selections", c.MaxSelections, "most GraphQL selections in one document, fragments expanded, checked before validation (10 to 5000)")
	fs.DurationVar(&c.LastUsedInterval, "last-used-interval", c.LastUsedInterval, "how often API keys' last_used_at is written")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a graceful stop may take")
	fs.DurationVar(&c.EventPollInterval, "event-poll-interval", c.EventPollInterval, "how often live delivery re-reads the event log besides the wake-up on commit")
	fs.DurationVar(&c.StreamHeartbeat, "stream-heartbeat", c.StreamHeartbeat, "interval of the keep-alives of event streams (comments) and WebSockets (pings)")
	fs.IntVar(&c.MaxStreamsPerOrg, "max-streams-per-org", c.MaxStreamsPerOrg, "open event streams one organization may hold; more get 429")
	fs.Float64Var(&c.RateLimit, "rate-limit", c.RateLimit, "sustained API requests per second per key")
	fs.IntVar(&c.RateBurst, "rate-burst", c.RateBurst, "API requests a key may make at once before the rate applies")
	fs.DurationVar(&c.APIReadHeaderTimeout, "api-read-header-timeout", c.APIReadHeaderTimeout, "time an API client has to send a request's headers")
	fs.DurationVar(&c.APIReadTimeout, "api-read-timeout", c.APIReadTimeout, "time an API client has to send a whole request, body included (event streams and WebSockets are not cut by it)")
	fs.DurationVar(&c.APIIdleTimeout, "api-idle-timeout", c.APIIdleTimeout, "how long an idle keep-alive API connection stays open")
	fs.IntVar(&c.MaxUnauthConns, "max-unauthenticated-conns", c.MaxUnauthConns, "API connections that have not authenticated yet, at once; more are closed on accept")
	fs.Float64Var(&c.AuthFailureRate, "auth-failure-rate", c.AuthFailureRate, "failed authentications per second a client address may sustain before it gets 429")
	fs.IntVar(&c.AuthFailureBurst, "auth-failure-burst", c.AuthFailureBurst, "failed authentications a client address may make at once before auth-failure-rate applies")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "server-side deadline of one API request, past which it gets 503 (event streams and WebSockets are exempt)")
	fs.StringVar(&c.JWT.JWKSURL, "jwks-url", c.JWT.JWKSURL, "identity provider's JWKS URL; empty disables JWT sign-in")
	fs.StringVar(&c.JWT.Issuer, "jwt-issuer", c.JWT.Issuer, "required JWT issuer")
	fs.StringVar(&c.JWT.Audience, "jwt-audience", c.JWT.Audience, "required JWT audience")
	fs.StringVar(&c.JWT.OrgClaim, "jwt-org-claim", c.JWT.OrgClaim, "JWT claim holding the organization id")
	fs.StringVar(&c.JWT.ScopeClaim, "jwt-scope-claim", c.JWT.ScopeClaim, "JWT claim holding the scope")
	fs.BoolVar(&c.Webhook.AllowPrivate, "webhook-allow-private", c.Webhook.AllowPrivate, "let every organization's webhooks reach loopback, private, link-local and metadata addresses (answers from them are stored only for organizations that opted in; see flytrap orgs set-webhook-network)")
	fs.Func("webhook-allow-cidrs", "comma-separated CIDRs every organization's webhooks may reach even though they are private (per organization: flytrap orgs set-webhook-network)", func(v string) error {
		ps, err := parsePrefixes(v)
		c.Webhook.AllowCIDRs = ps
		return err
	})
	fs.Float64Var(&c.WebhookManual.PerMinute, "webhook-manual-rate", c.WebhookManual.PerMinute, "pings and redeliveries a minute one webhook endpoint may be sent; more get 429 / RATE_LIMITED")
	fs.IntVar(&c.WebhookManual.Burst, "webhook-manual-burst", c.WebhookManual.Burst, "pings and redeliveries one webhook endpoint may be sent at once before webhook-manual-rate applies")
	fs.IntVar(&c.SessionDetailLimit, "session-detail-limit", c.SessionDetailLimit, "newest hits, signals and prompts a session's detail shows, each (1 to 1000; REST and GraphQL alike)")
	fs.IntVar(&c.Webhook.Workers, "webhook-workers", c.Webhook.Workers, "webhook deliveries sent at once per instance")
	fs.DurationVar(&c.Webhook.Timeout, "webhook-timeout", c.Webhook.Timeout, "time limit of one webhook attempt")
	fs.DurationVar(&c.Webhook.Poll, "webhook-poll-interval", c.Webhook.Poll, "how often due webhook deliveries are looked for besides the wake-up on commit")
	fs.Func("trap-public-url", "the trap listener's public base URL, shown by the dashboard (default http://<trap-addr>)", urlFlag(&c.TrapPublicURL))
	fs.Func("oidc-issuer", "identity provider's issuer URL for the dashboard's sign-in (Authorization Code + PKCE); empty: API keys only", urlFlag(&c.OIDC.Issuer))
	fs.StringVar(&c.OIDC.ClientID, "oidc-client-id", c.OIDC.ClientID, "the dashboard's OIDC client id (a public client: no secret)")
	fs.StringVar(&c.OIDC.Scopes, "oidc-scopes", orDefault(c.OIDC.Scopes, defaultOIDCScopes), "scopes the dashboard asks the identity provider for")
	fs.Func("public-url", "the dashboard's external base URL (e.g. https://flytrap.example.com); alerts link to sessions under it; empty: no links", urlFlag(&c.PublicURL))
	fs.BoolVar(&c.Metrics, "metrics", c.Metrics, "serve Prometheus metrics at /metrics on the API listener")
	fs.StringVar(&c.MetricsToken, "metrics-token", c.MetricsToken, "bearer token /metrics requires; empty: /metrics is open to whoever reaches the API listener")
	fs.DurationVar(&c.MetricsSessionsRefresh, "metrics-sessions-refresh", c.MetricsSessionsRefresh, "how long the sessions-by-classification gauge reuses one count of the sessions table (1s to 1h)")
	fs.Func("upstream", "the application the trap listener stands in front of (http:// or https:// URL): what is not a trap or a token is proxied to it, its HTML pages get lures; empty: the listener answers everything itself", func(v string) error {
		u, err := parseUpstream(v)
		c.Upstream = u
		return err
	})
	fs.Int64Var(&c.GCHeapFloorBytes, "gc-heap-floor-bytes", c.GCHeapFloorBytes, "the heap may grow to this many bytes before Go's garbage collector runs (then to twice the live heap); 0: Go's default. GOGC in the environment wins")
	fs.Int64Var(&c.MaxLureBytes, "lure-max-bytes", c.MaxLureBytes, "upstream HTML pages larger than this get no lures (and a page is searched this far for its </body>)")
	c.registerRetention(fs)
	c.registerBulkheads(fs)
	fs.IntVar(&c.WebsocketMaxOperations, "ws-max-operations", c.WebsocketMaxOperations, "operations (queries, mutations, subscriptions) one GraphQL WebSocket may run at once; more get RATE_LIMITED (1 to 10000)")
	c.registerProxy(fs)
	fs.Func("oidc-token", "JWT the dashboard sends to the API after OIDC sign-in: access_token (default) or id_token", oidcTokenFlag(&c.OIDC.Token))
	c.registerCost(fs)
}

// registerCost declares the flags of what one API request may ask for (docs/security.md,
// "Filters and response bytes").
func (c *Config) registerCost(fs *flag.FlagSet) {
	fs.IntVar(&c.Where.MaxNodes, "where-max-nodes", c.Where.MaxNodes, "predicates, list items and nesting levels in all the where filters of one GraphQL operation (10 to 1000)")
	fs.IntVar(&c.Where.MaxWidth, "where-max-width", c.Where.MaxWidth, "items in one and, or or hasXWith list of a where filter (2 to 100)")
	fs.IntVar(&c.Where.MaxScans, "where-max-scans", c.Where.MaxScans, "substring, prefix, suffix and case-folded predicates on any text field (and any on a hit body or prompt text) in one request, counted once per row of the pages they filter (0 to 20)")
	fs.IntVar(&c.SessionDetailBytes, "session-detail-bytes", c.SessionDetailBytes, "stored bytes of each list (hits, signals, prompts) of a session's detail, newest first (64 KiB to 8 MiB; REST and GraphQL alike)")
}

// validateCost checks the flags of registerCost.
func (c *Config) validateCost() []error {
	var errs []error
	if c.Where.MaxNodes < 10 || c.Where.MaxNodes > 1000 {
		errs = append(errs, errors.New("where-max-nodes: must be between 10 and 1000"))
	}
	if c.Where.MaxWidth < 2 || c.Where.MaxWidth > 100 {
		errs = append(errs, errors.New("where-max-width: must be between 2 and 100"))
	}
	if c.Where.MaxScans < 0 || c.Where.MaxScans > 20 {
		errs = append(errs, errors.New("where-max-scans: must be between 0 and 20"))
	}
	if c.SessionDetailBytes < app.MinDetailBytes || c.SessionDetailBytes > app.MaxDetailBytes {
		errs = append(errs, fmt.Errorf("session-detail-bytes: must be between %d and %d", app.MinDetailBytes, app.MaxDetailBytes))
	}
	return errs
}

func parsePrefixes(v string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, p := range splitList(v) {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			a, aerr := netip.ParseAddr(p)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR", p)
			}
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		ps = append(ps, pfx.Masked())
	}
	return ps, nil
}

// ParseFlags fills fs's flags from the environment (FLYTRAP_<FLAG>), then from args,
// which win. A variable that does not parse is an error naming it, never ignored.
func ParseFlags(fs *flag.FlagSet, args []string, env Env) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvName(f.Name)
		f.Usage += " (" + name + ")"
		if v := env(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return fs.Parse(args)
}

// Validate checks the configuration once, before anything starts.
func (c Config) Validate() error {
	var errs []error
	if c.APIAddr == "" {
		errs = append(errs, errors.New("api-addr: must not be empty"))
	}
	if c.TrapAddr == "" || (c.TrapAddr == c.APIAddr && !strings.HasSuffix(c.TrapAddr, ":0")) {
		errs = append(errs, errors.New("trap-addr: must be set and differ from api-addr"))
	}
	if c.Trap.QueueSize < 1 || c.Trap.BatchSize < 1 || c.Trap.SessionIdle < time.Minute {
		errs = append(errs, errors.New("hit-queue and hit-batch must be positive, session-idle at least 1m"))
	}
	if c.DB == "" {
		errs = append(errs, errors.New("db: must not be empty"))
	}
	switch c.LogFormat {
	case "auto", "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log-format: %q is not auto, text or json", c.LogFormat))
	}
	if c.MaxBodyBytes < 1024 {
		errs = append(errs, errors.New("max-body-bytes: must be at least 1024"))
	}
	if c.ComplexityLimit < 1 || c.DepthLimit < 1 {
		errs = append(errs, errors.New("complexity-limit and depth-limit: must be positive"))
	}
	if c.SessionDetailLimit < 1 || c.SessionDetailLimit > app.MaxDetailLimit {
		errs = append(errs, fmt.Errorf("session-detail-limit: must be between 1 and %d (sessionDetail's GraphQL cost assumes it)", app.MaxDetailLimit))
	}
	if c.MaxSelections < 10 || c.MaxSelections > 5000 {
		errs = append(errs, errors.New("max-selections: must be between 10 and 5000 (validation cost grows with its square)"))
	}
	if c.EventPollInterval < 10*time.Millisecond || c.StreamHeartbeat < 100*time.Millisecond || c.StreamHeartbeat > 15*time.Second {
		errs = append(errs, errors.New("event-poll-interval must be at least 10ms and stream-heartbeat between 100ms and 15s"))
	}
	if c.RateLimit <= 0 || c.RateBurst < 1 {
		errs = append(errs, errors.New("rate-limit and rate-burst: must be positive"))
	}
	if c.APIReadHeaderTimeout < 100*time.Millisecond || c.APIReadTimeout < c.APIReadHeaderTimeout || c.APIIdleTimeout < time.Second {
		errs = append(errs, errors.New("api-read-header-timeout must be at least 100ms, api-read-timeout at least as long, api-idle-timeout at least 1s"))
	}
	if err := c.validateBulkheads(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxUnauthConns < 1 {
		errs = append(errs, errors.New("max-unauthenticated-conns: must be positive"))
	}
	if c.AuthFailureRate <= 0 || c.AuthFailureBurst < 1 {
		errs = append(errs, errors.New("auth-failure-rate and auth-failure-burst: must be positive"))
	}
	if c.RequestTimeout < 100*time.Millisecond {
		errs = append(errs, errors.New("request-timeout: must be at least 100ms"))
	}
	if c.MaxStreamsPerOrg < 1 {
		errs = append(errs, errors.New("max-streams-per-org: must be positive"))
	}
	if c.LastUsedInterval < time.Second {
		errs = append(errs, errors.New("last-used-interval: must be at least 1s"))
	}
	if c.WebhookManual.PerMinute <= 0 || c.WebhookManual.PerMinute > 600 || c.WebhookManual.Burst < 1 || c.WebhookManual.Burst > 100 {
		errs = append(errs, errors.New("webhook-manual-rate must be above 0 and at most 600, webhook-manual-burst between 1 and 100"))
	}
	if c.MaxLureBytes < 1024 {
		errs = append(errs, errors.New("lure-max-bytes: must be at least 1024"))
	}
	if c.MetricsSessionsRefresh < time.Second || c.MetricsSessionsRefresh > time.Hour {
		errs = append(errs, errors.New("metrics-sessions-refresh: must be between 1s and 1h"))
	}
	errs = append(errs, c.validateCost()...)
	if t := c.MetricsToken; t != "" && (len(t) < 16 || len(t) > 256 || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' || r > '~' })) {
		errs = append(errs, errors.New("metrics-token: must be 16 to 256 printable ASCII characters without spaces"))
	}
	if err := c.Retention.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.DiskLowBytes < 0 {
		errs = append(errs, errors.New("disk-low-bytes: must not be negative"))
	}
	if c.GCHeapFloorBytes < 0 || c.GCHeapFloorBytes > 1<<40 {
		errs = append(errs, errors.New("gc-heap-floor-bytes: must be 0 (off) to 1 TiB"))
	}
	if c.WebsocketMaxOperations < 1 || c.WebsocketMaxOperations > 10000 {
		errs = append(errs, errors.New("ws-max-operations: must be between 1 and 10000"))
	}
	if err := c.Webhook.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.validateProxy()...)
	if c.JWT.Enabled() {
		if err := c.JWT.normalize().validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// String describes the configuration with secrets redacted, for logs.
func (c Config) String() string {
	upstream := ""
	if c.Upstream != nil {
		upstream = " upstream=" + c.Upstream.String()
	}
	return fmt.Sprintf("trap-addr=%s api-addr=%s db=%s introspection=%t jwt=%t max-body-bytes=%d metrics=%t metrics-token=%t retention=[%s]%s",
		c.TrapAddr, c.APIAddr, RedactDSN(c.DB), c.Introspection, c.JWT.Enabled(), c.MaxBodyBytes, c.Metrics, c.MetricsToken != "", c.Retention, upstream)
}

// RedactDSN hides a database URL's password.
func RedactDSN(dsn string) string {
	scheme, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return dsn
	}
	userinfo, host, ok := strings.Cut(rest, "@")
	if !ok {
		return dsn
	}
	if user, _, hasPass := strings.Cut(userinfo, ":"); hasPass {
		return scheme + "://" + user + ":xxxxx@" + host
	}
	return dsn
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// OSEnv is the process environment.
var OSEnv Env = os.Getenv

// parseUpstream reads --upstream: an absolute http or https URL without query or fragment.
func parseUpstream(v string) (*url.URL, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL of a host (no credentials, query or fragment)", v)
	}
	return u, nil
}

// registerProxy adds the flags of the trap listener's connections and the lure proxy's bounds.
func (c *Config) registerProxy(fs *flag.FlagSet) {
	fs.IntVar(&c.TrapMaxConns, "trap-max-conns", c.TrapMaxConns, "trap listener connections open at once; at the cap a new one replaces an idle keep-alive connection or is closed; 0: half the process's open-file limit (64 to 16384)")
	fs.DurationVar(&c.ProxyReadTimeout, "proxy-read-timeout", c.ProxyReadTimeout, "lure proxy: longest wait for a visitor's next bytes of a proxied request body, or of a WebSocket quiet both ways")
	fs.DurationVar(&c.ProxyWriteTimeout, "proxy-write-timeout", c.ProxyWriteTimeout, "lure proxy: longest one write of a proxied answer to a visitor may take (a visitor that stops reading is cut)")
	fs.IntVar(&c.UpstreamMaxConns, "upstream-max-conns", c.UpstreamMaxConns, "lure proxy: connections to the upstream open at once; more requests wait for one (within upstream-timeout)")
	fs.DurationVar(&c.UpstreamTimeout, "upstream-timeout", c.UpstreamTimeout, "lure proxy: time the upstream has to accept a connection, answer with headers, and between two reads of its answer; past it the visitor gets 504")
}

func (c Config) validateProxy() []error {
	var errs []error
	if c.TrapMaxConns < 0 || c.TrapMaxConns > 1<<20 {
		errs = append(errs, errors.New("trap-max-conns: must be 0 (half the open-file limit) to 1048576"))
	}
	if c.ProxyReadTimeout < 100*time.Millisecond || c.ProxyWriteTimeout < 100*time.Millisecond || c.UpstreamTimeout < 100*time.Millisecond {
		errs = append(errs, errors.New("proxy-read-timeout, proxy-write-timeout and upstream-timeout: must be at least 100ms"))
	}
	if c.UpstreamMaxConns < 1 || c.UpstreamMaxConns > 1<<16 {
		errs = append(errs, errors.New("upstream-max-conns: must be between 1 and 65536"))
	}
	return errs
}
