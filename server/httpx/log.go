package httpx

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

type statusRecorder struct {
	http.ResponseWriter
	status  int
	upgrade bool // a WebSocket upgrade: a hijack answers 101; an event stream's hijack writes a 200 itself
	hijack  bool // the connection was taken over: a stream or a WebSocket, lasting as long as it is open
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack lets WebSocket upgrades and event streams take their connection over;
// gorilla/websocket asks for http.Hijacker directly.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.hijack = true
	if s.status == 0 {
		s.status = http.StatusOK
		if s.upgrade {
			s.status = http.StatusSwitchingProtocols
		}
	}
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// Flush lets streaming responses through.
func (s *statusRecorder) Flush() { _ = http.NewResponseController(s.ResponseWriter).Flush() }

// Route is the pattern r was routed by, "unmatched" when none: a metric label and a log
// field that a scanner's paths cannot multiply.
func Route(r *http.Request) string {
	if r.Pattern == "" || r.Pattern == "/" {
		return "unmatched"
	}
	return r.Pattern
}

// LogRequests logs one line per request, and tells observe its status, duration and whether
// the connection was taken over (a WebSocket or a stream). It logs the normalised route,
// never the query string or headers, which may carry secrets.
func LogRequests(log *slog.Logger, observe func(r *http.Request, status int, took time.Duration, hijacked bool), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, upgrade: IsWebsocketUpgrade(r)}
		next.ServeHTTP(rec, r)
		took := time.Since(start)
		observe(r, rec.status, took, rec.hijack)
		level := slog.LevelInfo
		if IsProbe(r) && rec.status < 500 {
			level = slog.LevelDebug // health checks, scrapes and static files would drown the rest
		}
		log.LogAttrs(r.Context(), level, "request",
			slog.String("request_id", RequestID(r.Context())),
			slog.String("method", r.Method),
			slog.String("route", Route(r)),
			slog.Int("status", rec.status),
			slog.Float64("duration_ms", Millis(took)),
		)
	})
}

// IsProbe reports whether r is a liveness or readiness probe, a metrics scrape or a
// dashboard asset: requests logged at DEBUG unless they fail with a 5xx.
func IsProbe(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics", "/favicon.ico", "/favicon.svg", "/robots.txt":
		return true
	}
	return strings.HasPrefix(r.URL.Path, "/assets/")
}

// Millis is d in milliseconds with microsecond precision: the unit log keys name (duration_ms).
func Millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
