package server

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the whole configuration of a Flytrap instance, filled from flags
// and FLYTRAP_* environment variables (flags win), validated once.
type Config struct {
	APIAddr          string
	DB               string
	LogFormat        string // auto, text or json
	LogLevel         string
	Introspection    bool
	AllowedOrigins   []string
	MaxBodyBytes     int64
	ComplexityLimit  int
	DepthLimit       int
	LastUsedInterval time.Duration
	ShutdownTimeout  time.Duration
	JWT              JWTConfig

	EventPollInterval time.Duration
	StreamHeartbeat   time.Duration
	MaxStreamsPerOrg  int
	RateLimit         float64 // requests per second per credential
	RateBurst         int
}

// DefaultConfig is the configuration with nothing set.
func DefaultConfig() Config {
	return Config{
		APIAddr:          "127.0.0.1:8080",
		DB:               "flytrap.db",
		LogFormat:        "auto",
		LogLevel:         "info",
		Introspection:    true,
		MaxBodyBytes:     1 << 20,
		ComplexityLimit:  20000,
		DepthLimit:       12,
		LastUsedInterval: 30 * time.Second,
		ShutdownTimeout:  15 * time.Second,
		JWT:              JWTConfig{OrgClaim: "org_id", ScopeClaim: "scope"},

		EventPollInterval: time.Second,
		StreamHeartbeat:   15 * time.Second,
		MaxStreamsPerOrg:  50,
		RateLimit:         20,
		RateBurst:         200,
	}
}

// Env reads an environment variable; tests replace it.
type Env func(string) string

// RegisterDB adds --db to fs, defaulting from FLYTRAP_DB.
func RegisterDB(fs *flag.FlagSet, dst *string, env Env) {
	fs.StringVar(dst, "db", envOr(env, "FLYTRAP_DB", *dst), "database: a SQLite file (or sqlite:PATH) or a postgres:// URL (FLYTRAP_DB)")
}

// Register adds every serve flag to fs, with defaults from the environment.
func (c *Config) Register(fs *flag.FlagSet, env Env) {
	fs.StringVar(&c.APIAddr, "api-addr", envOr(env, "FLYTRAP_API_ADDR", c.APIAddr), "address of the API listener: GraphQL, REST, dashboard (FLYTRAP_API_ADDR)")
	RegisterDB(fs, &c.DB, env)
	fs.StringVar(&c.LogFormat, "log-format", envOr(env, "FLYTRAP_LOG_FORMAT", c.LogFormat), "log format: auto (text on a terminal, JSON otherwise), text or json (FLYTRAP_LOG_FORMAT)")
	fs.StringVar(&c.LogLevel, "log-level", envOr(env, "FLYTRAP_LOG_LEVEL", c.LogLevel), "log level: debug, info, warn or error (FLYTRAP_LOG_LEVEL)")
	fs.BoolVar(&c.Introspection, "introspection", envBool(env, "FLYTRAP_INTROSPECTION", c.Introspection), "allow GraphQL introspection queries (FLYTRAP_INTROSPECTION)")
	fs.Func("allowed-origins", "comma-separated origins allowed to open GraphQL WebSockets besides the API's own (FLYTRAP_ALLOWED_ORIGINS)", func(s string) error {
		c.AllowedOrigins = splitList(s)
		return nil
	})
	c.AllowedOrigins = splitList(envOr(env, "FLYTRAP_ALLOWED_ORIGINS", strings.Join(c.AllowedOrigins, ",")))
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", envInt64(env, "FLYTRAP_MAX_BODY_BYTES", c.MaxBodyBytes), "largest API request body; larger ones get 413 (FLYTRAP_MAX_BODY_BYTES)")
	fs.IntVar(&c.ComplexityLimit, "complexity-limit", int(envInt64(env, "FLYTRAP_COMPLEXITY_LIMIT", int64(c.ComplexityLimit))), "largest GraphQL query complexity (FLYTRAP_COMPLEXITY_LIMIT)")
	fs.IntVar(&c.DepthLimit, "depth-limit", int(envInt64(env, "FLYTRAP_DEPTH_LIMIT", int64(c.DepthLimit))), "deepest GraphQL selection nesting (FLYTRAP_DEPTH_LIMIT)")
	fs.DurationVar(&c.LastUsedInterval, "last-used-interval", envDuration(env, "FLYTRAP_LAST_USED_INTERVAL", c.LastUsedInterval), "how often API keys' last_used_at is written (FLYTRAP_LAST_USED_INTERVAL)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", envDuration(env, "FLYTRAP_SHUTDOWN_TIMEOUT", c.ShutdownTimeout), "how long a graceful stop may take (FLYTRAP_SHUTDOWN_TIMEOUT)")
	fs.DurationVar(&c.EventPollInterval, "event-poll-interval", envDuration(env, "FLYTRAP_EVENT_POLL_INTERVAL", c.EventPollInterval), "how often live delivery re-reads the event log besides the wake-up on commit (FLYTRAP_EVENT_POLL_INTERVAL)")
	fs.DurationVar(&c.StreamHeartbeat, "stream-heartbeat", envDuration(env, "FLYTRAP_STREAM_HEARTBEAT", c.StreamHeartbeat), "interval of the event stream's keep-alive comments (FLYTRAP_STREAM_HEARTBEAT)")
	fs.IntVar(&c.MaxStreamsPerOrg, "max-streams-per-org", int(envInt64(env, "FLYTRAP_MAX_STREAMS_PER_ORG", int64(c.MaxStreamsPerOrg))), "open event streams one organization may hold; more get 429 (FLYTRAP_MAX_STREAMS_PER_ORG)")
	fs.Float64Var(&c.RateLimit, "rate-limit", envFloat(env, "FLYTRAP_RATE_LIMIT", c.RateLimit), "sustained API requests per second per key (FLYTRAP_RATE_LIMIT)")
	fs.IntVar(&c.RateBurst, "rate-burst", int(envInt64(env, "FLYTRAP_RATE_BURST", int64(c.RateBurst))), "API requests a key may make at once before the rate applies (FLYTRAP_RATE_BURST)")
	fs.StringVar(&c.JWT.JWKSURL, "jwks-url", envOr(env, "FLYTRAP_JWKS_URL", c.JWT.JWKSURL), "identity provider's JWKS URL; empty disables JWT sign-in (FLYTRAP_JWKS_URL)")
	fs.StringVar(&c.JWT.Issuer, "jwt-issuer", envOr(env, "FLYTRAP_JWT_ISSUER", c.JWT.Issuer), "required JWT issuer (FLYTRAP_JWT_ISSUER)")
	fs.StringVar(&c.JWT.Audience, "jwt-audience", envOr(env, "FLYTRAP_JWT_AUDIENCE", c.JWT.Audience), "required JWT audience (FLYTRAP_JWT_AUDIENCE)")
	fs.StringVar(&c.JWT.OrgClaim, "jwt-org-claim", envOr(env, "FLYTRAP_JWT_ORG_CLAIM", c.JWT.OrgClaim), "JWT claim holding the organization id (FLYTRAP_JWT_ORG_CLAIM)")
	fs.StringVar(&c.JWT.ScopeClaim, "jwt-scope-claim", envOr(env, "FLYTRAP_JWT_SCOPE_CLAIM", c.JWT.ScopeClaim), "JWT claim holding the scope (FLYTRAP_JWT_SCOPE_CLAIM)")
}

// Validate checks the configuration once, before anything starts.
func (c Config) Validate() error {
	var errs []error
	if c.APIAddr == "" {
		errs = append(errs, errors.New("api-addr: must not be empty"))
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
	if c.EventPollInterval < 10*time.Millisecond || c.StreamHeartbeat < 100*time.Millisecond || c.StreamHeartbeat > 15*time.Second {
		errs = append(errs, errors.New("event-poll-interval must be at least 10ms and stream-heartbeat between 100ms and 15s"))
	}
	if c.RateLimit <= 0 || c.RateBurst < 1 {
		errs = append(errs, errors.New("rate-limit and rate-burst: must be positive"))
	}
	if c.MaxStreamsPerOrg < 1 {
		errs = append(errs, errors.New("max-streams-per-org: must be positive"))
	}
	if c.LastUsedInterval < time.Second {
		errs = append(errs, errors.New("last-used-interval: must be at least 1s"))
	}
	if c.JWT.Enabled() {
		if err := c.JWT.normalize().validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// String describes the configuration with secrets redacted, for logs.
func (c Config) String() string {
	return fmt.Sprintf("api-addr=%s db=%s introspection=%t jwt=%t max-body-bytes=%d",
		c.APIAddr, RedactDSN(c.DB), c.Introspection, c.JWT.Enabled(), c.MaxBodyBytes)
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

func envOr(env Env, key, def string) string {
	if v := env(key); v != "" {
		return v
	}
	return def
}

func envBool(env Env, key string, def bool) bool {
	if b, err := strconv.ParseBool(env(key)); err == nil {
		return b
	}
	return def
}

func envInt64(env Env, key string, def int64) int64 {
	if n, err := strconv.ParseInt(env(key), 10, 64); err == nil {
		return n
	}
	return def
}

func envFloat(env Env, key string, def float64) float64 {
	if f, err := strconv.ParseFloat(env(key), 64); err == nil {
		return f
	}
	return def
}

func envDuration(env Env, key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(env(key)); err == nil {
		return d
	}
	return def
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
