// Package traptls is the trap listener's HTTPS: its tls.Config (HTTP/2 and HTTP/1.1 by
// ALPN), a certificate of one's own reloaded when it changes, and plain HTTP beside it,
// redirected to https or served per host.
package traptls

import (
	"crypto/tls"
	"github.com/flytrap/flytrap/decoy"
	"github.com/mholt/acmez/v3"
	"io"
	"net"
	"net/http"
	"strings"
)

// NewConfig is the trap listener's tls.Config over a certificate source.
//
// Every ClientHello passes through one place, GetConfigForClient: a hook for the client's
// fingerprint (JA4, issue 25 item 2) goes there, returning nil to keep this config.
// With acme, it also takes ACME's TLS-ALPN-01 challenges ("acme-tls/1").
func NewConfig(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), acme bool) *tls.Config {
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		NextProtos:     []string{"h2", "http/1.1"},
		GetCertificate: getCert,
		// Full-size records from a connection's first byte: Go otherwise sends its first
		// 128 KB in records of about one TCP segment (for the first paint of a browser on a
		// slow link), each its own write(2). A decoy page of 7.5 KB then left in seven; a
		// honeypot's visitors make a few requests a connection, so it never grew out of it.
		DynamicRecordSizingDisabled: true,
	}
	if acme {
		c.NextProtos = append(c.NextProtos, acmez.ACMETLS1Protocol)
	}
	return c
}

// Plain is the handler of the plain-HTTP listener beside the TLS one: a host of
// c.HTTPServe is answered by next as over HTTPS; any other is redirected (308) to the
// same URL over https on tlsPort ("443" or "" leaves the port out). A request without a
// usable Host goes to next, which answers it as it does any unknown host.
func Plain(c *Config, tlsPort string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
		if host == "" || len(host) > 253 || c.Serves(host) || strings.ContainsAny(host, "/\\@ ") {
			next.ServeHTTP(w, r)
			return
		}
		if tlsPort != "" && tlsPort != "443" {
			host = net.JoinHostPort(host, tlsPort)
		} else if strings.Contains(host, ":") { // an IPv6 literal
			host = "[" + host + "]"
		}
		uri := r.URL.RequestURI()
		if !strings.HasPrefix(uri, "/") {
			uri = "/"
		}
		h := w.Header() // as nginx's "return 308 https://$host$request_uri" answers
		h.Set("Location", "https://"+host+uri)
		h.Set("Content-Type", "text/html")
		h.Set("Server", decoy.ServerHeader)
		w.WriteHeader(http.StatusPermanentRedirect)
		if r.Method != http.MethodHead {
			io.WriteString(w, redirectPage)
		}
	})
}

const redirectPage = "<html>\r\n<head><title>308 Permanent Redirect</title></head>\r\n<body>\r\n<center><h1>308 Permanent Redirect</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
