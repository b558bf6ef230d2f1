package proxy

import (
	"net/http"
	"testing"

	"github.com/flytrap/flytrap/decoy"
)

func TestAllowStyleHash(t *testing.T) {
	const h = "'sha256-X'"
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"script-src 'self'", "script-src 'self'"}, // nothing governs styles
		{"style-src 'self' 'unsafe-inline'", "style-src 'self' 'unsafe-inline'"},
		{"default-src 'self' 'unsafe-inline'", "default-src 'self' 'unsafe-inline'"},
		{"style-src 'self'", "style-src 'self' 'unsafe-hashes' " + h},
		{"default-src 'self'; img-src *", "default-src 'self'; img-src *; style-src 'self' 'unsafe-hashes' " + h},
		{"default-src 'none'", "default-src 'none'; style-src 'unsafe-hashes' " + h},
		{"style-src 'none'", "style-src 'unsafe-hashes' " + h},
		// A hash or nonce turns 'unsafe-inline' off: the hash must be added.
		{"style-src 'unsafe-inline' 'nonce-abc'", "style-src 'unsafe-inline' 'nonce-abc' 'unsafe-hashes' " + h},
		{"style-src-attr 'none'; style-src 'self'", "style-src-attr 'unsafe-hashes' " + h + "; style-src 'self' 'unsafe-hashes' " + h},
		{"style-src-attr 'unsafe-inline'; style-src 'self'", "style-src-attr 'unsafe-inline'; style-src 'self'"},
		{"STYLE-SRC 'self' 'unsafe-hashes'", "style-src 'self' 'unsafe-hashes' " + h},
		{"style-src 'self'; style-src 'unsafe-inline'", "style-src 'self' 'unsafe-hashes' " + h}, // the first of a repeated directive counts
		// Two policies in one header value: each is enforced, each gets it.
		{"style-src 'self', default-src https:", "style-src 'self' 'unsafe-hashes' " + h + ", default-src https:; style-src https: 'unsafe-hashes' " + h},
	} {
		if got := allowStyleHash(c.in, h); got != c.want {
			t.Errorf("allowStyleHash(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestAllowLureStyleHeaders(t *testing.T) {
	hdr := http.Header{}
	hdr.Add("Content-Security-Policy", "default-src 'self'")
	hdr.Add("Content-Security-Policy", "style-src 'unsafe-inline'")
	hdr.Set("Content-Security-Policy-Report-Only", "style-src 'self'; report-uri /csp")
	allowLureStyle(hdr)
	hash := decoy.LureStyleHash()
	want := []string{"default-src 'self'; style-src 'self' 'unsafe-hashes' " + hash, "style-src 'unsafe-inline'"}
	if got := hdr.Values("Content-Security-Policy"); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Content-Security-Policy %q, want %q", got, want)
	}
	if got := hdr.Get("Content-Security-Policy-Report-Only"); got != "style-src 'self' 'unsafe-hashes' "+hash+"; report-uri /csp" {
		t.Errorf("report-only %q", got)
	}
}
