package server

import (
	"flag"
	"fmt"
	"github.com/flytrap/flytrap/crawler"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/proxy"
	"github.com/flytrap/flytrap/retention"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/gqltransport"
	"github.com/flytrap/flytrap/settings"
	"github.com/flytrap/flytrap/trap"
	"github.com/flytrap/flytrap/traptls"
	"github.com/flytrap/flytrap/webhook"
)

// Config is the whole configuration of a Flytrap instance, filled from flags
// and FLYTRAP_* environment variables (flags win), validated once.
type Config struct {
	APIAddr  string
	TrapAddr string
	Trap     trap.Config
	TrapTLS  traptls.Config // HTTPS on the trap listener (docs/deployment.md)
	// Crawler verification: reverse DNS and the refreshed range lists (crawler/, docs/detection.md).
	Crawler          crawler.Config
	DB               string
	LogFormat        string // auto, text or json
	LogLevel         string
	AllowedOrigins   []string
	MaxBodyBytes     int64
	LastUsedInterval time.Duration
	ShutdownTimeout  time.Duration
	JWT              auth.JWTConfig
	// Limits are the GraphQL transport's: introspection, complexity, depth, selections.
	gqltransport.Limits
	Webhook webhook.Config
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

	// Proxy is the lure proxy's (package proxy): the upstream the trap listener stands in
	// front of (nil: the listener answers everything itself), the pages that get lures, the
	// bounds toward visitors and the upstream. Its TrustedProxies are Trap.TrustedProxies.
	Proxy proxy.Config

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
	// The trap listener's connections (docs/security.md, "The lure proxy"); the lure proxy's
	// own bounds are in Proxy.
	TrapMaxConns int // trap listener connections open at once; 0: half the open-file limit (trapMaxConns)
}

// DefaultConfig is the configuration with nothing set: every declared default (settings.go),
// over the defaults of what no flag sets (trap, webhook, retention).
func DefaultConfig() Config {
	c := Config{Trap: trap.DefaultConfig(), Webhook: webhook.DefaultConfig(), Retention: retention.DefaultConfig()}
	c.Settings().Defaults()
	return c
}

// Env reads an environment variable; tests replace it.
type Env = settings.Env

// OSEnv is the process environment.
var OSEnv = settings.OSEnv

// RegisterDB adds --db to fs, for the commands that take only it.
func RegisterDB(fs *flag.FlagSet, dst *string) {
	s := &settings.Set{}
	declareDB(s, dst)
	s.Register(fs)
}

// Register adds every serve flag to fs, with c's values as defaults.
func (c *Config) Register(fs *flag.FlagSet) { c.Settings().Register(fs) }

// ParseFlags fills fs's flags from the environment (FLYTRAP_<FLAG>), then from args,
// which win. A variable that does not parse is an error naming it, never ignored.
func ParseFlags(fs *flag.FlagSet, args []string, env Env) error {
	return settings.ParseFlags(fs, args, env)
}

// Validate checks the configuration once, before anything starts.
func (c Config) Validate() error { return c.Settings().Validate() }

// String describes the configuration with secrets redacted, for logs.
func (c Config) String() string {
	upstream := ""
	if c.Proxy.Upstream != nil {
		upstream = " upstream=" + c.Proxy.Upstream.String()
	}
	switch t := c.TrapTLS; {
	case t.Auto:
		upstream += " trap-tls=auto trap-tls-acme-ca=" + t.ACMECA
	case t.CertFile != "":
		upstream += " trap-tls=" + t.CertFile
	}
	if c.TrapTLS.HTTPAddr != "" {
		upstream += " trap-http-addr=" + c.TrapTLS.HTTPAddr
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
