package proxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/flytrap/flytrap/settings"
)

// DeclareUpstream declares the application the trap listener stands in front of and the
// pages that get lures, over c. (c.TrustedProxies is the trap listener's --trusted-proxies.)
func (c *Config) DeclareUpstream(s *settings.Set) {
	s.Func("upstream", "", "the application the trap listener stands in front of (http:// or https:// URL): what is not a trap or a token is proxied to it, its HTML pages get lures; empty: the listener answers everything itself", func(v string) error {
		u, err := ParseUpstream(v)
		c.Upstream = u
		return err
	}).
		Doc("The application the trap listener stands in front of (`http://` or `https://` URL): what is not a trap or a token is proxied to it, and its HTML pages get hidden lures ([Flytrap in front of your site](#flytrap-in-front-of-your-site))").DefaultDoc("none")
	s.Int64(&c.MaxLureBytes, "lure-max-bytes", DefaultMaxLureBytes, "upstream HTML pages larger than this get no lures (and a page is searched this far for its </body>)").
		Doc("Upstream HTML pages larger than this (by `Content-Length`) get no lures, a page is searched this far for its `</body>`, and compressed this far for the visitor (the rest is sent in stored gzip blocks)").
		Min(1024)
}

// Declare declares the lure proxy's bounds toward visitors and the upstream over c
// (docs/security.md, "The lure proxy").
func (c *Config) Declare(s *settings.Set) {
	s.Duration(&c.ReadTimeout, "proxy-read-timeout", DefaultReadTimeout, "lure proxy: longest wait for a visitor's next bytes of a proxied request body, or of a WebSocket quiet both ways").
		Doc("Lure proxy: longest wait for a visitor's next bytes of a proxied request body (then 408), or of a WebSocket quiet both ways (then closed)")
	s.Duration(&c.WriteTimeout, "proxy-write-timeout", DefaultWriteTimeout, "lure proxy: longest one write of a proxied answer to a visitor may take (a visitor that stops reading is cut)").
		Doc("Lure proxy: longest one write of a proxied answer to a visitor may take; a visitor that stops reading is cut")
	s.Int(&c.UpstreamMaxConns, "upstream-max-conns", DefaultUpstreamMaxConns, "lure proxy: connections to the upstream open at once; more requests wait for one (within upstream-timeout)").
		Doc("Lure proxy: connections to the upstream at once; more requests wait for one (1 to 65536)")
	s.Duration(&c.UpstreamTimeout, "upstream-timeout", DefaultUpstreamTimeout, "lure proxy: time the upstream has to accept a connection, answer with headers, and between two reads of its answer; past it the visitor gets 504").
		Doc("Lure proxy: time the upstream has to accept a connection, send its answer's headers, and between two reads of its answer, and a request's wait for a connection; past it the visitor gets 504")
	s.Rule(func() error {
		if c.ReadTimeout < 100*time.Millisecond || c.WriteTimeout < 100*time.Millisecond || c.UpstreamTimeout < 100*time.Millisecond {
			return errors.New("proxy-read-timeout, proxy-write-timeout and upstream-timeout: must be at least 100ms")
		}
		return nil
	})
	s.Rule(func() error {
		if c.UpstreamMaxConns < 1 || c.UpstreamMaxConns > 1<<16 {
			return errors.New("upstream-max-conns: must be between 1 and 65536")
		}
		return nil
	})
}

// ParseUpstream reads --upstream: an absolute http or https URL without query or fragment;
// empty is nil (no upstream).
func ParseUpstream(v string) (*url.URL, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL of a host (no credentials, query or fragment)", v)
	}
	return u, nil
}
