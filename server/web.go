package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/flytrap/flytrap/web"
)

// dashboardCSP allows only the dashboard's own scripts and styles (no inline script or
// style), its GraphQL endpoint over HTTP and WebSocket, and no framing.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// apiPrefixes keep their JSON 404 for unknown routes: a typo in an API call must not get HTML.
var apiPrefixes = []string{"/api/", "/dashboard/api/", "/graphql"}

// dashboard serves the embedded single-page app at / for GET and HEAD: hashed files under
// /assets/ with a year-long immutable cache, and index.html (revalidated every time) for the
// app's routes and for any other path a browser navigates to (Accept: text/html), so the app's
// own router handles deep links and shows its not-found page. Everything else is the JSON 404.
func (s *Server) dashboard() http.Handler {
	return newDashboardHandler(web.Dist(), func(w http.ResponseWriter, r *http.Request) {
		restError(w, http.StatusNotFound, "no such route: "+r.Method+" "+truncateForLog(r.URL.Path, 200))
	})
}

func newDashboardHandler(dist fs.FS, notFound http.HandlerFunc) http.Handler {
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		// A binary built without the dashboard (web/dist missing) still serves the API.
		return notFound
	}
	sum := sha256.Sum256(index)
	indexETag := `"` + hex.EncodeToString(sum[:8]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notFound(w, r)
			return
		}
		for _, p := range apiPrefixes {
			if r.URL.Path == strings.TrimSuffix(p, "/") || strings.HasPrefix(r.URL.Path, p) {
				notFound(w, r)
				return
			}
		}
		if !strings.HasPrefix(r.URL.Path, "/assets/") && !isDashboardRoute(r.URL.Path) && !acceptsHTML(r) {
			notFound(w, r) // API clients and scanners probing /.env and the like keep the JSON 404
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", dashboardCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")

		if strings.HasPrefix(r.URL.Path, "/assets/") {
			name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
			f, err := fs.ReadFile(dist, name)
			if err != nil || !strings.HasPrefix(name, "assets/") {
				notFound(w, r) // never index.html for a missing script: it would run as HTML
				return
			}
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
			http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f))
			return
		}
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("ETag", indexETag)
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
	})
}

// isDashboardRoute reports whether p is one of the app's own pages.
func isDashboardRoute(p string) bool {
	if p == "/" || p == "/index.html" {
		return true
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
	switch first {
	case "sessions", "traps", "settings":
		return true
	}
	return false
}

// acceptsHTML reports whether the request is a browser navigation rather than an API call.
func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
