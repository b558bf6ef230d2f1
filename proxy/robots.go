package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/trap"
)

// Bounds of the application's robots.txt as the proxy reads it.
const (
	maxRobots     = 500 << 10 // what Google reads of a robots.txt
	robotsTTL     = time.Minute
	robotsTimeout = 5 * time.Second
	robotsHosts   = 1024 // hosts whose robots.txt is remembered at once
)

// serveRobots answers /robots.txt on a site with a robots trap: the trap's answer (its
// hit recorded as always) merged into the application's robots.txt, so the site keeps
// its own rules and the crawlers are told to stay out of the traps.
func (p *Proxy) serveRobots(w http.ResponseWriter, r *http.Request, rt trap.Route) {
	rec := &recorder{header: http.Header{}}
	p.engine.ServeHTTP(rec, r)
	if rec.status != http.StatusOK {
		rec.copyTo(w, rec.body.Bytes())
		return
	}
	app := p.robots.get(r.Context(), r.Host)
	body := mergeRobots(app, rec.body.Bytes(), rt.Disallow, p.engine.Key())
	rec.copyTo(w, body)
}

// mergeRobots puts the robots trap's lines into the application's robots.txt: its
// Disallow lines for the trap paths and hidden callbacks go into the application's
// "User-agent: *" group (a new one at the end if it has none), its comment lines that
// carry instructions at the end. The decoy's other lines (made-up rules for a made-up
// site) are left out: the application's own rules stand.
func mergeRobots(app, decoyBody []byte, traps []string, key decoy.Key) []byte {
	var rules, notes []string
	sc := bufio.NewScanner(bytes.NewReader(decoyBody))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Disallow: "):
			v := strings.TrimPrefix(line, "Disallow: ")
			if slices.Contains(traps, v) || len(decoy.FindTokens(key, v)) > 0 {
				rules = append(rules, line)
			}
		case strings.HasPrefix(line, "#") && len(decoy.FindTokens(key, line)) > 0:
			notes = append(notes, line)
		}
	}
	lines := strings.Split(strings.ReplaceAll(string(app), "\r\n", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	at := -1 // after the user-agent lines of the first group for every crawler
	for i := 0; i < len(lines); i++ {
		if k, v, ok := robotsLine(lines[i]); ok && k == "user-agent" && v == "*" {
			at = i + 1
			for at < len(lines) {
				if k, _, ok := robotsLine(lines[at]); !ok || k != "user-agent" {
					break
				}
				at++
			}
			break
		}
	}
	var out []string
	if at >= 0 {
		out = append(out, lines[:at]...)
		out = append(out, rules...)
		out = append(out, lines[at:]...)
	} else {
		out = append(out, lines...)
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, "User-agent: *")
		out = append(out, rules...)
	}
	if len(notes) > 0 {
		out = append(out, "")
		out = append(out, notes...)
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// robotsLine splits a robots.txt line into its lower-case key and value, comments dropped.
func robotsLine(line string) (key, value string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	k, v, ok := strings.Cut(line, ":")
	if !ok {
		return "", "", false
	}
	return strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v), true
}

// robotsCache remembers each host's robots.txt from the application for a minute.
type robotsCache struct {
	client   *http.Client
	upstream *url.URL

	mu      sync.Mutex
	entries map[string]robotsEntry
}

type robotsEntry struct {
	body    []byte
	expires time.Time
}

func newRobotsCache(tr http.RoundTripper, upstream *url.URL) *robotsCache {
	return &robotsCache{
		client: &http.Client{Transport: tr, Timeout: robotsTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		upstream: upstream,
		entries:  map[string]robotsEntry{},
	}
}

// get returns host's robots.txt from the application; nothing when it has none, or
// answers with an error or something that is not text.
func (c *robotsCache) get(ctx context.Context, host string) []byte {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[host]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.body
	}
	body := c.fetch(context.WithoutCancel(ctx), host)
	c.mu.Lock()
	if len(c.entries) >= robotsHosts {
		clear(c.entries)
	}
	c.entries[host] = robotsEntry{body: body, expires: now.Add(robotsTTL)}
	c.mu.Unlock()
	return body
}

func (c *robotsCache) fetch(ctx context.Context, host string) []byte {
	u := *c.upstream
	u.Path, u.RawPath, u.RawQuery = strings.TrimSuffix(u.Path, "/")+"/robots.txt", "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil
	}
	req.Host = host
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	if resp.StatusCode != http.StatusOK || (ct != "" && !strings.HasPrefix(ct, "text/")) {
		return nil
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && ce != "identity" {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRobots))
	if err != nil {
		return nil
	}
	return b
}

// recorder keeps the trap listener's small answer to /robots.txt for merging.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) copyTo(w http.ResponseWriter, body []byte) {
	h := w.Header()
	for k, v := range r.header {
		h[k] = v
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(body)
}
