package server_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
)

const (
	stackGroup = "real TLS clients (Chromium, curl, Python, Java, Node)"
	stackHow   = "run `bash scripts/install-chromium.sh` (Chromium, node, tests/browser/node_modules); curl and python3 with requests (CI has them)"
)

// forgedChrome is a desktop Chrome user agent; v varies it per client, so that each
// forgery is a session of its own.
func forgedChrome(v int) string {
	return fmt.Sprintf("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/%d.0.0.0 Safari/537.36", 120+v)
}

// stackClient is a real client on this machine, run with a user agent ("": its own).
type stackClient struct {
	name   string
	family string // the stack family the listener must resolve it to
	// browser: the forged Chrome user agent is its own kind: the claim is true.
	browser bool
	missing string // why it cannot run here, or ""
	run     func(ctx context.Context, url, ua string) error
}

func realClients(t *testing.T) []stackClient {
	root, _ := filepath.Abs("..")
	missing := func(bins ...string) string {
		for _, b := range bins {
			if _, err := exec.LookPath(b); err != nil {
				return b + " is not installed"
			}
		}
		return ""
	}
	command := func(ctx context.Context, env []string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %v\n%s", name, err, out)
		}
		return nil
	}
	chromium := ""
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		chromium = "/usr/bin/chromium is missing"
	} else if m := missing("node"); m != "" {
		chromium = m
	} else if _, err := os.Stat(filepath.Join(root, "tests", "browser", "node_modules", "playwright-core")); err != nil {
		chromium = "tests/browser/node_modules is missing"
	}
	python := func(mod string) string {
		if m := missing("python3"); m != "" {
			return m
		}
		if err := exec.Command("python3", "-c", "import "+mod).Run(); err != nil {
			return "python3 cannot import " + mod
		}
		return ""
	}
	return []stackClient{
		{name: "chromium", family: "chromium", browser: true, missing: chromium, run: func(ctx context.Context, url, ua string) error {
			return command(ctx, nil, "node", filepath.Join(root, "tests", "browser", "clientstack.mjs"), url, ua)
		}},
		{name: "curl", family: "curl", missing: missing("curl"), run: func(ctx context.Context, url, ua string) error {
			args := []string{"-sSk", "-o", "/dev/null", url}
			if ua != "" {
				args = append(args, "-A", ua)
			}
			return command(ctx, nil, "curl", args...)
		}},
		{name: "python-requests", family: "python", missing: python("requests"), run: func(ctx context.Context, url, ua string) error {
			return command(ctx, []string{"URL=" + url, "UA=" + ua}, "python3", "-c", `
import os, requests, urllib3
urllib3.disable_warnings()
h = {"User-Agent": os.environ["UA"]} if os.environ["UA"] else {}
requests.get(os.environ["URL"], headers=h, verify=False, timeout=20)`)
		}},
		{name: "python-urllib", family: "python", missing: python("ssl"), run: func(ctx context.Context, url, ua string) error {
			return command(ctx, []string{"URL=" + url, "UA=" + ua}, "python3", "-c", `
import os, ssl, urllib.request
h = {"User-Agent": os.environ["UA"]} if os.environ["UA"] else {}
urllib.request.urlopen(urllib.request.Request(os.environ["URL"], headers=h), context=ssl._create_unverified_context(), timeout=20).read()`)
		}},
		{name: "go", family: "go", run: func(ctx context.Context, url, ua string) error {
			tr := http.DefaultTransport.(*http.Transport).Clone() // Go's defaults: HTTP/2 by ALPN
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
			defer tr.CloseIdleConnections()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if ua != "" {
				req.Header.Set("User-Agent", ua)
			}
			res, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				return err
			}
			io.Copy(io.Discard, res.Body)
			return res.Body.Close()
		}},
		{name: "java", family: "java", missing: missing("java"), run: func(ctx context.Context, url, ua string) error {
			// The test certificate does not name localhost: Java's client checks names apart from trust.
			return command(ctx, nil, "java", "-Djdk.internal.httpclient.disableHostnameVerification=true",
				filepath.Join("testdata", "clientstack", "Get.java"), url, ua)
		}},
		{name: "node-fetch", family: "node", missing: missing("node"), run: func(ctx context.Context, url, ua string) error {
			return command(ctx, []string{"URL=" + url, "UA=" + ua, "NODE_TLS_REJECT_UNAUTHORIZED=0", "NODE_NO_WARNINGS=1"}, "node", "-e", `
const h = process.env.UA ? { 'user-agent': process.env.UA } : {};
fetch(process.env.URL, { headers: h }).then((r) => r.text()).catch((e) => { console.error(e); process.exit(1); });`)
		}},
	}
}

// Real clients against the trap listener over TLS: each is resolved to its stack family
// from what its connection proves (JA4, HTTP/2, header order); with its own user agent
// none is flagged, and with a forged Chrome one every non-browser stack is
// (CLIENT_STACK_MISMATCH, BOT), while Chromium claiming Chrome is telling the truth.
func TestClientStacks(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dir := t.TempDir()
		writeCert(t, dir, 1)
		env := ft.Start(t, b, ft.JournalAck, func(c *server.Config) {
			c.TrapTLS.CertFile, c.TrapTLS.KeyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		})
		tn := env.Tenant("shop")
		createTrap(t, env, tn.ReadWrite, map[string]any{"name": "Payroll wiki", "type": "page", "path": "/internal/payroll"})
		tlsAddr, _ := tlsTrap(t, env)
		_, port, _ := net.SplitHostPort(tlsAddr)
		url := "https://localhost:" + port + "/internal/payroll"

		seen := map[string]bool{}
		const q = `{ sessions(first: 100) { edges { node { id userAgent classification signalsFired
			clientStacks { ja4 h2Fingerprint headerOrder family }
			hits(first: 5) { edges { node { ja4 h2Fingerprint headerOrder clientStack } } } } } } }`
		// session waits for the session the client's request made, and returns it.
		session := func() map[string]any {
			var found map[string]any
			pollGraphQL(t, env, tn.ReadOnly, q, func(d map[string]any) bool {
				for _, n := range nodes(ft.Dig(d, "sessions")) {
					if id := str(n["id"]); !seen[id] {
						seen[id], found = true, n
						return true
					}
				}
				return false
			})
			return found
		}
		for i, c := range realClients(t) {
			for _, forged := range []bool{false, true} {
				name := c.name + " own user agent"
				ua := ""
				if forged {
					name, ua = c.name+" forged Chrome user agent", forgedChrome(i)
				}
				t.Run(name, func(t *testing.T) {
					if c.missing != "" {
						ft.Skip(t, stackGroup, stackHow, c.missing)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					defer cancel()
					if err := c.run(ctx, url, ua); err != nil {
						t.Fatal(err)
					}
					s := session()
					hit := ft.Dig(s, "hits", "edges", 0, "node").(map[string]any)
					t.Logf("%s: user agent %q, JA4 %v, HTTP/2 %v, header order %v, stack %v; %v %v", name, s["userAgent"],
						hit["ja4"], hit["h2Fingerprint"], hit["headerOrder"], hit["clientStack"], s["classification"], s["signalsFired"])
					if hit["ja4"] == nil || hit["headerOrder"] == nil {
						t.Errorf("the hit carries no JA4 or header order: %v", hit)
					}
					if got := str(hit["clientStack"]); got != c.family {
						t.Errorf("stack family %q, want %q", got, c.family)
					}
					if stacks, _ := s["clientStacks"].([]any); len(stacks) == 0 || str(ft.Dig(stacks[0], "family")) != c.family {
						t.Errorf("the session shows client stacks %v, want %s", s["clientStacks"], c.family)
					}
					var fired []string
					for _, f := range s["signalsFired"].([]any) {
						fired = append(fired, str(f))
					}
					flagged := slices.Contains(fired, "CLIENT_STACK_MISMATCH")
					switch want := forged && !c.browser; {
					case flagged != want:
						t.Errorf("CLIENT_STACK_MISMATCH fired: %v, want %v (signals %v)", flagged, want, fired)
					case want && str(s["classification"]) != "BOT":
						t.Errorf("a forged browser claim classified %v, want BOT", s["classification"])
					case strings.HasPrefix(str(s["classification"]), "AI_"):
						t.Errorf("classified %v: a stack mismatch is never an AI class", s["classification"])
					}
				})
			}
		}
	})
}
