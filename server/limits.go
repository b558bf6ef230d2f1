package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/viewer"
)

// rateLimiter holds one token bucket per credential (API key, or JWT subject).
type rateLimiter struct {
	rate    rate.Limit
	burst   int
	buckets *lru.Cache[string, *rate.Limiter]
	// seen maps the hash of a bearer token whose request emptied its credential's bucket to
	// the credential, so that the next request with it is refused while the bucket is empty
	// before it is looked up (a database read for a key, a signature check for a JWT).
	seen *lru.Cache[[sha256.Size]byte, string]
	now  func() time.Time
}

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	cache, _ := lru.New[string, *rate.Limiter](100_000) // only fails for a size < 1
	seen, _ := lru.New[[sha256.Size]byte, string](100_000)
	return &rateLimiter{rate: rate.Limit(perSecond), burst: burst, buckets: cache, seen: seen, now: time.Now}
}

// learn remembers that header authenticated as v, whose bucket it emptied.
func (rl *rateLimiter) learn(header string, v viewer.Viewer) {
	rl.seen.Add(headerKey(header), credential(v))
}

// headerKey is what seen knows a header by: its bearer token, so that every spelling
// authentication accepts ("bearer", more whitespace) is the one header it is. Keyed by the
// raw header, each new spelling of a limited key cost a lookup (and a cache entry) again.
func headerKey(header string) [sha256.Size]byte {
	if token, err := auth.BearerToken(header); err == nil {
		header = token
	}
	return sha256.Sum256([]byte(header))
}

// exhausted reports whether header belongs to a credential whose bucket is empty, with
// the X-RateLimit headers set as allow sets them, and how long until a token is back; it
// takes no token. An unknown header is never exhausted: it is looked up, and the
// failed-authentication limit covers guessing.
func (rl *rateLimiter) exhausted(w http.ResponseWriter, header string) (bool, time.Duration) {
	id, ok := rl.seen.Get(headerKey(header))
	if !ok {
		return false, 0
	}
	lim, ok := rl.buckets.Get(id)
	if !ok {
		return false, 0
	}
	tokens := lim.TokensAt(rl.now())
	if tokens >= 1 {
		return false, 0
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(rl.burst))
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil((float64(rl.burst)-tokens)/float64(rl.rate)))))
	h.Set("Retry-After", strconv.Itoa(rl.retryAfter(tokens)))
	return true, rl.untilToken(tokens)
}

func credential(v viewer.Viewer) string {
	if v.KeyID != "" {
		return v.KeyID
	}
	return v.OrgID + "/" + v.Subject
}

// take takes a token for v and reports whether it had one, with the tokens left.
func (rl *rateLimiter) take(v viewer.Viewer) (allowed bool, tokens float64) {
	id := credential(v)
	lim, ok := rl.buckets.Get(id)
	if !ok {
		lim = rate.NewLimiter(rl.rate, rl.burst)
		rl.buckets.Add(id, lim)
	}
	now := rl.now()
	allowed = lim.AllowN(now, 1)
	return allowed, lim.TokensAt(now)
}

// retryAfter is how long until one token is back, in whole seconds.
func (rl *rateLimiter) retryAfter(tokens float64) int {
	return max(1, int(math.Ceil((1-tokens)/float64(rl.rate))))
}

// allow takes a token for v, sets the X-RateLimit headers, and reports whether the request
// may proceed, and, when the bucket is left empty, how long until a token is back.
func (rl *rateLimiter) allow(w http.ResponseWriter, v viewer.Viewer) (bool, time.Duration) {
	allowed, tokens := rl.take(v)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(rl.burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, int(math.Floor(tokens)))))
	// Reset: seconds until the bucket is full again.
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil((float64(rl.burst)-tokens)/float64(rl.rate)))))
	if !allowed {
		h.Set("Retry-After", strconv.Itoa(rl.retryAfter(tokens)))
	}
	return allowed, rl.untilToken(tokens)
}

// untilToken is how long a bucket holding tokens takes to hold one (0 when it does).
func (rl *rateLimiter) untilToken(tokens float64) time.Duration {
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(rl.rate) * float64(time.Second))
}

// admitOperation applies the per-credential rate limit to an operation on a
// WebSocket, which shares its bucket with the credential's HTTP requests.
func (s *Server) admitOperation(ctx context.Context) error {
	v, _ := viewer.FromContext(ctx)
	if ok, tokens := s.limiter.take(v); !ok {
		return apperr.TooMany("rate limit exceeded; retry in %d s", s.limiter.retryAfter(tokens))
	}
	return nil
}

// VersionHeader is the header in which a client selects, and the service states, the API version.
const VersionHeader = "Flytrap-Version"

// apiVersion checks a requested version and states the one that answers.
func apiVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.TrimSpace(r.Header.Get(VersionHeader))
		if v == "" {
			v = event.APIVersion
		}
		if !slices.Contains(event.SupportedVersions, v) {
			w.Header().Set(VersionHeader, event.APIVersion)
			msg := fmt.Sprintf("%s %q is not a version of this API (supported: %s)", VersionHeader, clip.Mark(v, 40), strings.Join(event.SupportedVersions, ", "))
			if strings.HasPrefix(r.URL.Path, "/graphql") {
				graphQLErrors(w, apperr.New(apperr.KindInvalid, msg))
			} else {
				restError(w, http.StatusBadRequest, msg)
			}
			return
		}
		w.Header().Set(VersionHeader, v)
		next.ServeHTTP(w, r)
	})
}
