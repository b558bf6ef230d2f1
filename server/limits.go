package server

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"

	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/viewer"
)

// rateLimiter holds one token bucket per credential (API key, or JWT subject).
type rateLimiter struct {
	rate    rate.Limit
	burst   int
	buckets *lru.Cache[string, *rate.Limiter]
	now     func() time.Time
}

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	cache, _ := lru.New[string, *rate.Limiter](100_000) // only fails for a size < 1
	return &rateLimiter{rate: rate.Limit(perSecond), burst: burst, buckets: cache, now: time.Now}
}

func credential(v viewer.Viewer) string {
	if v.KeyID != "" {
		return v.KeyID
	}
	return v.OrgID + "/" + v.Subject
}

// allow takes a token for v, sets the X-RateLimit headers, and reports whether the request may proceed.
func (rl *rateLimiter) allow(w http.ResponseWriter, v viewer.Viewer) bool {
	id := credential(v)
	lim, ok := rl.buckets.Get(id)
	if !ok {
		lim = rate.NewLimiter(rl.rate, rl.burst)
		rl.buckets.Add(id, lim)
	}
	now := rl.now()
	allowed := lim.AllowN(now, 1)
	tokens := lim.TokensAt(now)
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(rl.burst))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(0, int(math.Floor(tokens)))))
	// Reset: seconds until the bucket is full again.
	h.Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil((float64(rl.burst)-tokens)/float64(rl.rate)))))
	if !allowed {
		h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil((1-tokens)/float64(rl.rate))))))
	}
	return allowed
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
			msg := fmt.Sprintf("%s %q is not a version of this API (supported: %s)", VersionHeader, truncateForLog(v, 40), strings.Join(event.SupportedVersions, ", "))
			if strings.HasPrefix(r.URL.Path, "/graphql") {
				graphQLErrors(w, http.StatusBadRequest, CodeBadUserInput, msg)
			} else {
				restError(w, http.StatusBadRequest, msg)
			}
			return
		}
		w.Header().Set(VersionHeader, v)
		next.ServeHTTP(w, r)
	})
}
