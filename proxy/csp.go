package proxy

import (
	"net/http"
	"strings"

	"github.com/flytrap/flytrap/decoy"
)

// cspHeaders are the policies a page's lures must pass: enforced, and report-only (whose
// reports would otherwise name the lure to the site's report endpoint).
var cspHeaders = []string{"Content-Security-Policy", "Content-Security-Policy-Report-Only"}

// allowLureStyle lets the page's Content-Security-Policy headers allow the lures' style
// attribute (decoy.LureStyle) and nothing else.
func allowLureStyle(h http.Header) {
	hash := decoy.LureStyleHash()
	for _, name := range cspHeaders {
		vs := h.Values(name)
		if len(vs) == 0 {
			continue
		}
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = allowStyleHash(v, hash)
		}
		h[http.CanonicalHeaderKey(name)] = out
	}
}

// allowStyleHash rewrites one header value (policies separated by commas, each enforced
// on its own) so that a style attribute hashing to hash ('sha256-…') is allowed. A policy
// that already allows inline style attributes is left as it is (adding a hash would turn
// its 'unsafe-inline' off); otherwise the directive that governs style attributes gets
// 'unsafe-hashes' and the hash: style-src-attr, and style-src too for browsers that do not
// know style-src-attr; under default-src alone, a style-src with default-src's sources
// and the hash. Nothing is removed but a 'none' the new sources replace: the policy allows
// one more thing, the lure's exact style, and no less than before.
func allowStyleHash(value, hash string) string {
	policies := strings.Split(value, ",")
	for i, p := range policies {
		policies[i] = allowInPolicy(p, hash)
	}
	return strings.Join(policies, ",")
}

type directive struct {
	name    string // lower case
	sources []string
}

func allowInPolicy(policy, hash string) string {
	var ds []directive
	idx := map[string]int{}
	for _, part := range strings.Split(policy, ";") {
		f := strings.Fields(part)
		if len(f) == 0 {
			continue
		}
		name := strings.ToLower(f[0])
		if _, dup := idx[name]; dup {
			continue // a repeated directive is ignored by browsers
		}
		idx[name] = len(ds)
		ds = append(ds, directive{name: name, sources: f[1:]})
	}
	governing := -1
	for _, n := range []string{"style-src-attr", "style-src", "default-src"} {
		if i, ok := idx[n]; ok {
			governing = i
			break
		}
	}
	if governing < 0 || allowsInline(ds[governing].sources) {
		return policy
	}
	add := func(i int) {
		d := &ds[i]
		d.sources = withHash(d.sources, hash)
	}
	if ds[governing].name == "default-src" {
		src := append([]string(nil), ds[governing].sources...)
		ds = append(ds, directive{name: "style-src", sources: withHash(src, hash)})
	} else {
		add(governing)
		if i, ok := idx["style-src"]; ok && i != governing && !allowsInline(ds[i].sources) {
			add(i)
		}
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strings.Join(append([]string{d.name}, d.sources...), " ")
	}
	lead := policy[:len(policy)-len(strings.TrimLeft(policy, " \t"))]
	return lead + strings.Join(parts, "; ")
}

// allowsInline reports whether a source list allows every inline style: 'unsafe-inline'
// without a hash or nonce (which would make browsers ignore it).
func allowsInline(sources []string) bool {
	inline := false
	for _, s := range sources {
		l := strings.ToLower(s)
		switch {
		case l == "'unsafe-inline'":
			inline = true
		case strings.HasPrefix(l, "'sha256-"), strings.HasPrefix(l, "'sha384-"), strings.HasPrefix(l, "'sha512-"), strings.HasPrefix(l, "'nonce-"):
			return false
		}
	}
	return inline
}

// withHash adds 'unsafe-hashes' and hash to sources, in place of a 'none'.
func withHash(sources []string, hash string) []string {
	out := sources[:0:0]
	hashes, has := false, false
	for _, s := range sources {
		switch strings.ToLower(s) {
		case "'none'":
			continue
		case "'unsafe-hashes'":
			hashes = true
		}
		if s == hash {
			has = true
		}
		out = append(out, s)
	}
	if !hashes {
		out = append(out, "'unsafe-hashes'")
	}
	if !has {
		out = append(out, hash)
	}
	return out
}
