package trap

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/fingerprint"
)

// A hit carries its connection's fingerprints and the stack family they point to; behind
// a trusted proxy, only the JA4 the operator's header names, well-formed, and never from
// anyone else.
func TestHitFingerprints(t *testing.T) {
	const (
		chromeJA4 = "t13d1517h2_8daaf6152771_cb7bf5808d99"
		pythonJA4 = "t13d1812h1_85036bcba153_b26ce05bbdd6"
	)
	e := &Engine{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, JA4Header: "cf-ja4"}}
	conn := &fingerprint.Conn{JA4: pythonJA4, Order: "h105_0e0009a49490"}
	for _, tt := range []struct {
		name, peer, header string
		conn               *fingerprint.Conn
		ja4, order, stack  string
	}{
		{"direct: the connection's own", "203.0.113.9:5000", "", conn, pythonJA4, "h105_0e0009a49490", "python"},
		{"direct: a forged header is ignored", "203.0.113.9:5000", chromeJA4, conn, pythonJA4, "h105_0e0009a49490", "python"},
		{"plain HTTP, no fingerprint", "203.0.113.9:5000", "", nil, "", "", ""},
		{"trusted proxy: its header", "10.1.2.3:5000", chromeJA4, conn, chromeJA4, "", "chromium"},
		{"trusted proxy: a malformed header", "10.1.2.3:5000", "t13d1517h2_<script>", conn, "", "", ""},
		{"trusted proxy without a header: the proxy's own are dropped", "10.1.2.3:5000", "", conn, "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/x", nil)
			r.RemoteAddr = tt.peer
			if tt.header != "" {
				r.Header.Set("Cf-Ja4", tt.header)
			}
			if tt.conn != nil {
				r = r.WithContext(fingerprint.NewContext(context.Background(), tt.conn))
			}
			var o detect.Observation
			e.fingerprints(&o, r)
			if o.JA4 != tt.ja4 || o.HeaderOrder != tt.order || o.Stack != tt.stack || o.H2 != "" {
				t.Errorf("JA4 %q, order %q, stack %q, H2 %q; want %q, %q, %q", o.JA4, o.HeaderOrder, o.Stack, o.H2, tt.ja4, tt.order, tt.stack)
			}
		})
	}
}
