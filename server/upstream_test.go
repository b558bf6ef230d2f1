package server

import (
	"flag"
	"io"
	"strings"
	"testing"
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
	if err != nil || c.Upstream == nil || c.Upstream.String() != "http://127.0.0.1:3000/app/" || c.MaxLureBytes != 8<<20 {
		t.Fatalf("FLYTRAP_UPSTREAM: %v %v", c.Upstream, err)
	}
	if !strings.Contains(c.String(), "upstream=http://127.0.0.1:3000/app/") {
		t.Errorf("the configuration's description lacks the upstream: %s", c)
	}
	if c, err := parse([]string{"--upstream", "https://app.internal", "--lure-max-bytes", "4096"}, nil); err != nil || c.Upstream.Host != "app.internal" || c.MaxLureBytes != 4096 {
		t.Fatalf("--upstream: %v %v", c.Upstream, err)
	}
	if c, err := parse(nil, nil); err != nil || c.Upstream != nil {
		t.Fatalf("no upstream: %v %v", c.Upstream, err)
	}
	for _, args := range [][]string{
		{"--upstream", "127.0.0.1:3000"}, {"--upstream", "ftp://app"}, {"--upstream", "http://"},
		{"--upstream", "http://user:pw@app"}, {"--upstream", "http://app/?x=1"}, {"--upstream", "http://app/#f"},
		{"--lure-max-bytes", "10"},
	} {
		if _, err := parse(args, nil); err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
