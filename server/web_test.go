package server

import (
	"encoding/json"
	"flag"
	"github.com/flytrap/flytrap/server/auth"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func testDashboard(t *testing.T, st dashboardSettings) http.Handler {
	t.Helper()
	dist := fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>t</title>")}}
	return newDashboardHandler(dist, st, func(w http.ResponseWriter, r *http.Request) {
		restError(w, http.StatusNotFound, "no such route")
	})
}

func TestDashboardConfigJSON(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TrapAddr = "127.0.0.1:9081"
	cfg.JWT = auth.JWTConfig{JWKSURL: "https://idp.example.com/jwks", Issuer: "https://idp.example.com/realms/acme", Audience: "flytrap-api"}
	cfg.OIDC = OIDCConfig{Issuer: "https://idp.example.com/realms/acme", ClientID: "flytrap-dashboard"}
	st, warnings := dashboardSettingsFrom(cfg)
	if len(warnings) != 0 {
		t.Fatalf("warnings: %v", warnings)
	}
	h := testDashboard(t, st)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, dashboardConfigPath, nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Cache-Control") != "no-cache" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("GET config: %d %v", rec.Code, rec.Header())
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"oidc":{"audience":"flytrap-api","client_id":"flytrap-dashboard","issuer":"https://idp.example.com/realms/acme","scopes":"openid profile email","token":"access_token"},"trap_url":"http://127.0.0.1:9081"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Fatalf("config = %s\nwant     %s", b, want)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, dashboardConfigPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("POST config: %d", rec.Code)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	if !strings.Contains(csp, "connect-src 'self' ws: wss: https://idp.example.com;") || strings.Contains(csp, "*") {
		t.Fatalf("CSP = %q", csp)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/callback?code=x&state=y", nil))
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("/auth/callback: %d", rec.Code)
	}
}

func TestDashboardConfigWithoutOIDC(t *testing.T) {
	st, _ := dashboardSettingsFrom(DefaultConfig())
	h := testDashboard(t, st)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, dashboardConfigPath, nil))
	body, _ := io.ReadAll(rec.Body)
	if string(body) != `{"trap_url":"http://127.0.0.1:8081","oidc":null}` {
		t.Fatalf("config = %s", body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' ws: wss:;") {
		t.Fatalf("CSP = %q", csp)
	}
}

func TestDashboardTrapURL(t *testing.T) {
	for _, tt := range []struct{ public, addr, host, want string }{
		{"https://traps.example.com", "0.0.0.0:8081", "x", "https://traps.example.com"},
		{"", "127.0.0.1:8081", "dash.example.com", "http://127.0.0.1:8081"},
		{"", "0.0.0.0:8081", "dash.example.com:8080", "http://dash.example.com:8081"},
		{"", ":8081", "dash.example.com", "http://dash.example.com:8081"},
		{"", "[::]:8081", "[2001:db8::1]:8080", "http://[2001:db8::1]:8081"},
		{"", ":8081", "evil.example.com/<x>", "http://127.0.0.1:8081"},
		{"", ":443", "dash.example.com", "https://dash.example.com:443"}, // --trap-tls-cert
	} {
		r := httptest.NewRequest(http.MethodGet, dashboardConfigPath, nil)
		r.Host = tt.host
		if got := (dashboardSettings{TrapPublicURL: tt.public, TrapAddr: tt.addr, TrapTLS: tt.addr == ":443"}).trapURL(r); got != tt.want {
			t.Errorf("trapURL(%q, %q, host %q) = %q, want %q", tt.public, tt.addr, tt.host, got, tt.want)
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	if u, err := parsePublicURL(" https://idp.example.com/realms/acme/ "); err != nil || u != "https://idp.example.com/realms/acme" {
		t.Fatalf("got %q, %v", u, err)
	}
	for _, bad := range []string{"javascript:alert(1)", "idp.example.com", "https://u:p@idp.example.com", "https://idp.example.com/?a=1", "https://idp.example.com/#x", "ftp://idp.example.com", "https://a;b.example.com"} {
		if _, err := parsePublicURL(bad); err == nil {
			t.Errorf("parsePublicURL(%q) accepted", bad)
		}
	}
}

func TestDashboardSettingsWarnings(t *testing.T) {
	cfg := DefaultConfig()
	cfg.OIDC = OIDCConfig{Issuer: "https://idp.example.com"}
	if st, w := dashboardSettingsFrom(cfg); st.OIDC != nil || len(w) != 1 || !strings.Contains(w[0], "oidc-client-id") {
		t.Fatalf("issuer without client id: %+v %v", st.OIDC, w)
	}
	cfg.OIDC.ClientID = "c"
	if st, w := dashboardSettingsFrom(cfg); st.OIDC == nil || len(w) != 1 || !strings.Contains(w[0], "jwks-url") {
		t.Fatalf("without jwks-url: %+v %v", st.OIDC, w)
	}
	cfg.JWT = auth.JWTConfig{JWKSURL: "https://other.example.com/jwks", Issuer: "https://other.example.com", Audience: "a"}
	if _, w := dashboardSettingsFrom(cfg); len(w) != 1 || !strings.Contains(w[0], "differs from jwt-issuer") {
		t.Fatalf("issuer mismatch: %v", w)
	}
}

func TestDashboardFlags(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.Register(fs)
	env := map[string]string{"FLYTRAP_OIDC_CLIENT_ID": "from-env", "FLYTRAP_OIDC_ISSUER": "https://idp.example.com/"}
	if err := ParseFlags(fs, []string{"--trap-public-url", "https://traps.example.com/", "--oidc-token", "id_token"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	want := OIDCConfig{Issuer: "https://idp.example.com", ClientID: "from-env", Scopes: defaultOIDCScopes, Token: "id_token"}
	if cfg.OIDC != want || cfg.TrapPublicURL != "https://traps.example.com" {
		t.Fatalf("got %+v %q", cfg.OIDC, cfg.TrapPublicURL)
	}
	for _, args := range [][]string{{"--oidc-token", "refresh_token"}, {"--oidc-issuer", "not a url"}, {"--trap-public-url", "javascript:x"}} {
		c := DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Register(fs)
		if err := ParseFlags(fs, args, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
