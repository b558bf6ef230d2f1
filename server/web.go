package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/web"
)

// dashboardCSP allows only the dashboard's own scripts and styles (no inline script or
// style), its GraphQL endpoint over HTTP and WebSocket, and no framing. %s is the extra
// connect-src origin: the OIDC issuer's (discovery and token endpoint), or nothing.
const dashboardCSPFormat = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self' ws: wss:%s; font-src 'self'; object-src 'none'; base-uri 'none'; " +
	"form-action 'self'; frame-ancestors 'none'"

// dashboardConfigPath is the app's public configuration: no secret in it (the OIDC client is
// public and uses PKCE), so it is served without authentication.
const dashboardConfigPath = "/dashboard/config.json"

const defaultOIDCScopes = "openid profile email"

// OIDCConfig is the dashboard's sign-in with the identity provider (Authorization Code +
// PKCE in the browser). The API still checks the resulting JWT against auth.JWTConfig.
type OIDCConfig struct {
	Issuer   string // FLYTRAP_OIDC_ISSUER; empty: API-key sign-in only
	ClientID string // FLYTRAP_OIDC_CLIENT_ID: a public client (no secret)
	Scopes   string // FLYTRAP_OIDC_SCOPES, default "openid profile email"
	Token    string // FLYTRAP_OIDC_TOKEN: access_token (default) or id_token, the JWT sent to the API
}

// Enabled reports whether the dashboard offers OIDC sign-in.
func (c OIDCConfig) Enabled() bool { return c.Issuer != "" && c.ClientID != "" }

// dashboardConfig is the body of GET /dashboard/config.json.
type dashboardConfig struct {
	TrapURL string      `json:"trap_url"`
	OIDC    *oidcPublic `json:"oidc"`
}

type oidcPublic struct {
	Issuer   string `json:"issuer"`
	ClientID string `json:"client_id"`
	Scopes   string `json:"scopes"`
	Audience string `json:"audience,omitempty"`
	Token    string `json:"token"`
}

// dashboardSettings is what the dashboard handler needs from the configuration.
type dashboardSettings struct {
	TrapPublicURL string // --trap-public-url, or "" for http://<trap-addr>
	TrapAddr      string
	TrapTLS       bool        // the trap listener speaks HTTPS: https://<trap-addr>
	OIDC          *oidcPublic // nil: no OIDC sign-in
}

// originOK keeps anything but scheme://host[:port] out of the CSP header.
var originOK = regexp.MustCompile(`^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)

// parsePublicURL checks an absolute http(s) URL with no credentials, query or fragment and
// returns it without a trailing slash.
func parsePublicURL(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q must be an absolute http or https URL", u.Redacted())
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("%q must have no credentials, query or fragment", u.Redacted())
	}
	if !originOK.MatchString(u.Scheme + "://" + u.Host) {
		return "", fmt.Errorf("%q has an unusable host", u.Redacted())
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// urlFlag is a flag.Func setter for parsePublicURL values.
func urlFlag(dst *string) func(string) error {
	return func(v string) error {
		u, err := parsePublicURL(v)
		*dst = u
		return err
	}
}

func oidcTokenFlag(dst *string) func(string) error {
	return func(v string) error {
		switch v = strings.TrimSpace(v); v {
		case "access_token", "id_token":
			*dst = v
			return nil
		}
		return fmt.Errorf("%q is not access_token or id_token", v)
	}
}

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}

// dashboardSettingsFrom derives the handler's settings, with warnings for OIDC settings that
// cannot work (the dashboard then offers API-key sign-in only).
func dashboardSettingsFrom(cfg Config) (dashboardSettings, []string) {
	st := dashboardSettings{TrapAddr: cfg.TrapAddr, TrapTLS: cfg.TrapTLS.Enabled()}
	var warnings []string
	if u, err := parsePublicURL(cfg.TrapPublicURL); err != nil {
		warnings = append(warnings, "trap-public-url: "+err.Error()+"; using http://<trap-addr>")
	} else {
		st.TrapPublicURL = u
	}
	o := cfg.OIDC
	if o.Issuer == "" && o.ClientID == "" {
		return st, warnings
	}
	issuer, err := parsePublicURL(o.Issuer)
	switch {
	case err != nil:
		warnings = append(warnings, "oidc-issuer: "+err.Error()+"; OIDC sign-in is off")
	case issuer == "":
		warnings = append(warnings, "oidc-client-id is set without oidc-issuer; OIDC sign-in is off")
	case strings.TrimSpace(o.ClientID) == "":
		warnings = append(warnings, "oidc-issuer is set without oidc-client-id; OIDC sign-in is off")
	default:
		token := orDefault(o.Token, "access_token")
		st.OIDC = &oidcPublic{
			Issuer:   issuer,
			ClientID: strings.TrimSpace(o.ClientID),
			Scopes:   strings.Join(strings.Fields(orDefault(o.Scopes, defaultOIDCScopes)), " "),
			Audience: strings.TrimSpace(cfg.JWT.Audience),
			Token:    token,
		}
		if !cfg.JWT.Enabled() {
			warnings = append(warnings, "oidc-issuer is set but jwks-url is not: the API will refuse the identity provider's tokens")
		} else if j := strings.TrimSuffix(strings.TrimSpace(cfg.JWT.Issuer), "/"); j != issuer {
			warnings = append(warnings, fmt.Sprintf("oidc-issuer %q differs from jwt-issuer %q: the API may refuse the identity provider's tokens", issuer, j))
		}
	}
	return st, warnings
}

// issuerOrigin is scheme://host[:port] of a parsePublicURL value.
func issuerOrigin(issuer string) (string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return "", err
	}
	o := u.Scheme + "://" + u.Host
	if !originOK.MatchString(o) {
		return "", errors.New("unusable issuer origin")
	}
	return o, nil
}

// trapURL is the trap listener's public base URL for a request to the API listener:
// --trap-public-url, or http://<trap-addr>, with an unspecified host (0.0.0.0, ::, empty)
// replaced by the host the browser used to reach the dashboard.
func (st dashboardSettings) trapURL(r *http.Request) string {
	if st.TrapPublicURL != "" {
		return st.TrapPublicURL
	}
	scheme := "http://"
	if st.TrapTLS {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(st.TrapAddr)
	if err != nil {
		return scheme + st.TrapAddr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if host == "" || !originOK.MatchString("http://"+hostForURL(host)) {
			host = "127.0.0.1"
		}
	}
	return scheme + net.JoinHostPort(host, port)
}

func hostForURL(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// apiPrefixes keep their JSON 404 for unknown routes: a typo in an API call must not get HTML.
var apiPrefixes = []string{"/api/", "/dashboard/api/", "/graphql"}

// dashboard serves the embedded single-page app at / for GET and HEAD: hashed files under
// /assets/ with a year-long immutable cache, and index.html (revalidated every time) for the
// app's routes and for any other path a browser navigates to (Accept: text/html), so the app's
// own router handles deep links and shows its not-found page. Everything else is the JSON 404.
//
// GET /dashboard/config.json is the app's public configuration (trap listener URL, OIDC
// issuer and client id); the CSP's connect-src adds the OIDC issuer's origin, nothing wider.
func (s *Server) dashboard() http.Handler {
	st, warnings := dashboardSettingsFrom(s.cfg)
	for _, w := range warnings {
		s.log.Warn("dashboard: " + w)
	}
	return newDashboardHandler(web.Dist(), st, func(w http.ResponseWriter, r *http.Request) {
		restError(w, http.StatusNotFound, "no such route: "+r.Method+" "+clip.Mark(r.URL.Path, 200))
	})
}

func newDashboardHandler(dist fs.FS, st dashboardSettings, notFound http.HandlerFunc) http.Handler {
	csp := fmt.Sprintf(dashboardCSPFormat, "")
	if st.OIDC != nil {
		origin, err := issuerOrigin(st.OIDC.Issuer)
		if err != nil {
			slog.Warn("dashboard: OIDC sign-in is off", "err", err)
			st.OIDC = nil
		} else {
			csp = fmt.Sprintf(dashboardCSPFormat, " "+origin)
		}
	}
	config := func(w http.ResponseWriter, r *http.Request) {
		body, err := json.Marshal(dashboardConfig{TrapURL: st.trapURL(r), OIDC: st.OIDC})
		if err != nil {
			restError(w, http.StatusInternalServerError, "dashboard configuration")
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
		http.ServeContent(w, r, "config.json", time.Time{}, bytes.NewReader(body))
	}
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		// A binary built without the dashboard (web/dist missing) still serves the API.
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == dashboardConfigPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
				config(w, r)
				return
			}
			notFound(w, r)
		})
	}
	sum := sha256.Sum256(index)
	indexETag := `"` + hex.EncodeToString(sum[:8]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			notFound(w, r)
			return
		}
		if r.URL.Path == dashboardConfigPath {
			config(w, r)
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
		h.Set("Content-Security-Policy", csp)
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
	case "sessions", "traps", "settings", "campaigns":
		return true
	case "auth": // /auth/callback: the identity provider's redirect back (the app finishes sign-in)
		return p == "/auth/callback"
	}
	return false
}

// acceptsHTML reports whether the request is a browser navigation rather than an API call.
func acceptsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}
