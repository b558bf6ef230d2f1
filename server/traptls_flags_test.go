package server

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/traptls"
)

// The trap listener's TLS flags: off by default, auto with Let's Encrypt, a pair of files,
// and the combinations that cannot work refused with the flag named.
func TestTrapTLSFlags(t *testing.T) {
	parse := func(args ...string) (Config, error) {
		c := DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Register(fs)
		err := ParseFlags(fs, args, func(string) string { return "" })
		if err == nil {
			err = c.Validate()
		}
		return c, err
	}
	if c, err := parse(); err != nil || c.TrapTLS.Enabled() {
		t.Fatalf("default: TLS %v, %v", c.TrapTLS.Enabled(), err)
	}
	c, err := parse("--trap-tls", "auto", "--trap-http-addr", ":80", "--trap-http-serve", "Plain.Example., b.example")
	if err != nil || !c.TrapTLS.Auto || c.TrapTLS.ACMECA != traptls.LetsEncrypt || !c.TrapTLS.Serves("plain.example") || !c.TrapTLS.Serves("b.example") || c.TrapTLS.Serves("c.example") {
		t.Fatalf("auto: %+v %v", c.TrapTLS, err)
	}
	if !strings.Contains(c.String(), " trap-tls=auto trap-tls-acme-ca="+traptls.LetsEncrypt+" trap-http-addr=:80") {
		t.Errorf("the configuration's description: %s", c)
	}
	if c, err := parse("--trap-tls-cert", "c.pem", "--trap-tls-key", "k.pem"); err != nil || !c.TrapTLS.Enabled() || c.TrapTLS.Auto || !strings.Contains(c.String(), " trap-tls=c.pem") {
		t.Fatalf("files: %+v %v", c.TrapTLS, err)
	}
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--trap-tls", "on"}, "trap-tls"},
		{[]string{"--trap-tls-cert", "c.pem"}, "trap-tls-key"},
		{[]string{"--trap-tls", "auto", "--trap-tls-cert", "c.pem", "--trap-tls-key", "k.pem"}, "trap-tls"},
		{[]string{"--trap-http-addr", ":80"}, "trap-http-addr"},
		{[]string{"--trap-http-serve", "a.example/x"}, "trap-http-serve"},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.flag)
		}
	}
}
