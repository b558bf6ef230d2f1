package server

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func TestUpstreamFlags(t *testing.T) {
	parse := func(args []string, env map[string]string) (Config, error) {
		c := DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Register(fs)
		err := ParseFlags(fs, args, func(k string) string { return env[k] })
		if err == nil {
			err = c.Validate()
		}
		return c, err
	}
	c, err := parse(nil, map[string]string{"FLYTRAP_UPSTREAM": "http://127.0.0.1:3000/app/"})
	if err != nil || c.Proxy.Upstream == nil || c.Proxy.Upstream.String() != "http://127.0.0.1:3000/app/" || c.Proxy.MaxLureBytes != 8<<20 {
		t.Fatalf("FLYTRAP_UPSTREAM: %v %v", c.Proxy.Upstream, err)
	}
	if !strings.Contains(c.String(), "upstream=http://127.0.0.1:3000/app/") {
		t.Errorf("the configuration's description lacks the upstream: %s", c)
	}
	if c, err := parse([]string{"--upstream", "https://app.internal", "--lure-max-bytes", "4096"}, nil); err != nil || c.Proxy.Upstream.Host != "app.internal" || c.Proxy.MaxLureBytes != 4096 {
		t.Fatalf("--upstream: %v %v", c.Proxy.Upstream, err)
	}
	if c, err := parse(nil, nil); err != nil || c.Proxy.Upstream != nil {
		t.Fatalf("no upstream: %v %v", c.Proxy.Upstream, err)
	}
	for _, args := range [][]string{
		{"--upstream", "127.0.0.1:3000"}, {"--upstream", "ftp://app"}, {"--upstream", "http://"},
		{"--upstream", "http://user:pw@app"}, {"--upstream", "http://app/?x=1"}, {"--upstream", "http://app/#f"},
		{"--lure-max-bytes", "10"},
		{"--trap-max-conns", "-1"}, {"--upstream-max-conns", "0"}, {"--upstream-timeout", "1ms"},
		{"--proxy-read-timeout", "0s"}, {"--proxy-write-timeout", "10ms"},
	} {
		if _, err := parse(args, nil); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}

// The lure proxy's bounds come from flags and FLYTRAP_* variables, with defaults that bound
// every direction, and a trap listener cap that follows the open-file limit unless set.
func TestProxyBoundsFlags(t *testing.T) {
	c := DefaultConfig()
	if c.TrapMaxConns != 0 || c.Proxy.ReadTimeout != time.Minute || c.Proxy.WriteTimeout != time.Minute || c.Proxy.UpstreamMaxConns != 256 || c.Proxy.UpstreamTimeout != time.Minute {
		t.Fatalf("defaults: %+v", c)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Register(fs)
	env := map[string]string{"FLYTRAP_TRAP_MAX_CONNS": "300", "FLYTRAP_UPSTREAM_TIMEOUT": "5s"}
	if err := ParseFlags(fs, []string{"--upstream-max-conns", "12", "--proxy-read-timeout", "2s", "--proxy-write-timeout", "3s"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.TrapMaxConns != 300 || c.Proxy.UpstreamTimeout != 5*time.Second || c.Proxy.UpstreamMaxConns != 12 || c.Proxy.ReadTimeout != 2*time.Second || c.Proxy.WriteTimeout != 3*time.Second {
		t.Fatalf("parsed: %+v", c)
	}
	s := &Server{cfg: c}
	if s.trapMaxConns() != 300 {
		t.Errorf("trap-max-conns 300: %d", s.trapMaxConns())
	}
	s.cfg.TrapMaxConns = 0
	if n, limit := s.trapMaxConns(), openFileLimit(); n < 64 || n > 16384 || (limit > 0 && uint64(n) > limit/2 && n != 64) {
		t.Errorf("trap-max-conns 0 with an open-file limit of %d: %d", limit, n)
	}
}
