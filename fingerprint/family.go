package fingerprint

import "strings"

// The client stack families, as Observation.Stack names them. The browsers' are also
// detect's (detect.BrowserStacks): a user agent claiming a browser is compared with them.
const (
	Chromium = "chromium" // Chrome, Edge, Opera, Brave…: BoringSSL and Chromium's HTTP/2
	Firefox  = "firefox"  // NSS
	Safari   = "safari"   // Apple's TLS (every browser on iOS)
	Curl     = "curl"     // curl, and clients on OpenSSL 3's default cipher list
	Python   = "python"   // Python's ssl module: requests/urllib3, urllib, httpx, aiohttp
	Go       = "go"       // Go's crypto/tls and net/http
	Node     = "node"     // Node.js: fetch (undici), https
	Java     = "java"     // the JDK's JSSE: java.net.http, HttpURLConnection
)

// Stack is one row of the table of client stacks: a fingerprint part and the family it
// belongs to, with where it was measured.
type Stack struct {
	Family string
	// Part is what is matched: "ja4b:" and JA4's cipher hash (the list of cipher suites a
	// TLS library offers by default, which its users rarely change), or "h2:" and an HTTP/2
	// fingerprint's SETTINGS and WINDOW_UPDATE (the HTTP/2 stack's), or "order:" and a
	// header-order fingerprint (for plain HTTP, where no other is).
	Part   string
	Source string
}

// Stacks is the table of client stacks. "measured" rows come from TestClientStacks
// (server/clientstack_test.go), the real clients on the build machine; the others from
// FoxIO's ja4plus-mapping.csv (github.com/FoxIO-LLC/ja4), for clients not installed here.
var Stacks = []Stack{
	{Chromium, "ja4b:8daaf6152771", "measured: Chromium 156 (Debian), playwright-core; FoxIO mapping: Chromium Browser"},
	{Chromium, "h2:1:65536;2:0;4:6291456;6:262144|15663105", "measured: Chromium 156"},
	{Firefox, "ja4b:5b57614c22b0", "FoxIO mapping: Mozilla Firefox"},
	{Safari, "ja4b:a09f3c656075", "FoxIO mapping: Safari"},
	{Curl, "ja4b:e8f1e7e78f70", "measured: curl 7.88.1, OpenSSL 3.0 (Debian 12)"},
	{Curl, "h2:3:100;4:33554432;2:0|33488897", "measured: curl 7.88.1, nghttp2"},
	{Python, "ja4b:85036bcba153", "measured: Python 3.11 requests 2.34 (urllib3 2.7) and urllib; FoxIO mapping: Python"},
	{Python, "order:h105_0e0009a49490", "measured: requests 2.34 over HTTP/1.1 (Host, User-Agent, Accept-Encoding, Accept, Connection)"},
	{Python, "order:h104_8c96759791e4", "measured: urllib (Python 3.11) over HTTP/1.1"},
	{Go, "ja4b:f57a46bbacb6", "measured: Go 1.26 net/http"},
	{Go, "ja4b:9dc949149365", "FoxIO mapping: GoLang"},
	{Go, "h2:2:0;4:4194304;5:16384;6:10485760|1073741824", "measured: Go 1.26 net/http"},
	{Node, "ja4b:a33745022dd6", "measured: Node.js 20 fetch (undici)"},
	{Java, "ja4b:db35923f8641", "measured: OpenJDK 17 java.net.http"},
	{Java, "h2:1:16384;2:0;3:0;4:16777216;5:16384;6:393216|33488897", "measured: OpenJDK 17 java.net.http"},
}

var browsers = map[string]bool{Chromium: true, Firefox: true, Safari: true}

// IsBrowser reports whether family is a browser's stack.
func IsBrowser(family string) bool { return browsers[family] }

var stackIndex = func() map[string]string {
	m := make(map[string]string, len(Stacks))
	for _, s := range Stacks {
		if _, dup := m[s.Part]; dup {
			panic("fingerprint: stack part " + s.Part + " listed twice")
		}
		m[s.Part] = s.Family
	}
	return m
}()

// Family is the client stack family the fingerprints point to, or "" when none is known.
// When the TLS and the HTTP/2 stacks disagree, a library's wins over a browser's: a
// library dressed in a browser's ClientHello (uTLS, curl-impersonate) rarely changes its
// HTTP/2 stack too, and the disagreement is itself a sign of it. The header order is used
// only when neither says anything.
func Family(ja4, h2, order string) string {
	var byTLS, byH2 string
	if len(ja4) == 36 {
		byTLS = stackIndex["ja4b:"+ja4[11:23]]
	}
	if h2 != "" {
		if i := strings.IndexByte(h2, '|'); i >= 0 {
			if j := strings.IndexByte(h2[i+1:], '|'); j >= 0 {
				byH2 = stackIndex["h2:"+h2[:i+1+j]]
			}
		}
	}
	switch {
	case byTLS != "" && byH2 != "" && IsBrowser(byTLS) && !IsBrowser(byH2):
		return byH2
	case byTLS != "":
		return byTLS
	case byH2 != "":
		return byH2
	case order != "":
		return stackIndex["order:"+order]
	}
	return ""
}
