package detect_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
)

var knownPaths = []string{"/internal/docs/billing", "/wiki/engineering/onboarding", "/api/internal/v1/customers", "/llms.txt", "/mcp"}

func TestClassifyProbe(t *testing.T) {
	for _, tt := range []struct {
		path string
		want detect.ProbeClass
	}{
		// A person's mistakes with a known path.
		{"/internal/docs/biling", detect.ProbeTypo},             // a letter dropped
		{"/internal/docs/bliling", detect.ProbeTypo},            // two letters swapped
		{"/internal/docs/billing)", detect.ProbeTypo},           // pasted with the bracket
		{"/INTERNAL/DOCS/BILLING", detect.ProbeTypo},            // caps lock
		{"/internal/docs/billing/", detect.ProbeTypo},           // a trailing slash
		{"/internal/docs/bil", detect.ProbeTypo},                // a truncated link
		{"/wiki/engineering/onbaording", detect.ProbeTypo},      // swapped
		{"/wiki/enginering/onboardin", detect.ProbeTypo},        // two letters dropped
		{"/api/internal/v1/customer", detect.ProbeTypo},         // singular
		{"/llm.txt", detect.ProbeTypo},                          // short: one edit
		{"/mpc", detect.ProbeTypo},                              // short: one swap
		{"/internal/docs/payroll", detect.ProbeUnknown},         // another page
		{"/about", detect.ProbeUnknown},                         // nothing near
		{"/mcpx/a", detect.ProbeUnknown},                        // short paths allow one edit only
		{"/.env", detect.ProbeWordlist},                         // wordlists
		{"/.git/config", detect.ProbeWordlist},                  //
		{"/wp-admin/", detect.ProbeWordlist},                    //
		{"/wp-login.php", detect.ProbeWordlist},                 //
		{"/phpmyadmin/index.php", detect.ProbeWordlist},         //
		{"/backup.zip", detect.ProbeWordlist},                   //
		{"/.aws/credentials", detect.ProbeWordlist},             //
		{"/cgi-bin/../../etc/passwd", detect.ProbeWordlist},     //
		{"/actuator/env", detect.ProbeWordlist},                 //
		{"/.DS_Store", detect.ProbeWordlist},                    //
		{"/" + string(make([]byte, 3000)), detect.ProbeUnknown}, // too long to compare
	} {
		if got := detect.ClassifyProbe(tt.path, knownPaths); got != tt.want {
			t.Errorf("ClassifyProbe(%.40q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	if detect.ClassifyProbe("/internal/docs/biling") != detect.ProbeUnknown {
		t.Error("a path is a typo of nothing when nothing is known")
	}
}

func TestProbeCounts(t *testing.T) {
	for _, tt := range []struct {
		path, ua string
		want     bool
	}{
		{"/internal/docs/biling", chrome, false},
		{"/internal/docs/biling", "curl/8.5.0", false},
		{"/about-us", chrome, false}, // a person's stale link
		{"/about-us", "curl/8.5.0", true},
		{"/.git/config", chrome, true},
		{"/.git/config", "python-requests/2.32.3", true},
	} {
		if got := detect.ProbeCounts(tt.path, tt.ua, knownPaths); got != tt.want {
			t.Errorf("ProbeCounts(%q, %.20q) = %v, want %v", tt.path, tt.ua, got, tt.want)
		}
	}
}

// notFound is an unknown path asked for at t0+at, on a site whose traps are knownPaths.
func notFound(path, ua string, at time.Duration) detect.Observation {
	o := request(path, at)
	o.Kind, o.UA, o.Known = "not_found", ua, knownPaths
	return o
}

func TestObserveProbing(t *testing.T) {
	// Ten people behind one office NAT with the same browser share a session: each
	// mistypes a trap path, or follows a stale link, once.
	t.Run("office NAT typos", func(t *testing.T) {
		s := newSession(chrome)
		typos := []string{"/internal/docs/biling", "/internal/docs/billing/", "/wiki/engineering/onbaording", "/INTERNAL/DOCS/BILLING",
			"/api/internal/v1/customer", "/internal/docs/bil", "/wiki/engineering/onboardin", "/llm.txt", "/about", "/careers"}
		for i, p := range typos {
			var out detect.Outcome
			s, out = detect.Observe(s, notFound(p, chrome, time.Duration(i)*time.Second))
			if len(out.Firings) > 0 || out.Verdict.Classification != detect.ClassHuman || detect.Detected(out.Verdict) {
				t.Fatalf("%s: fired %v, verdict %+v", p, names(out.Firings), out.Verdict)
			}
		}
		if len(s.State.ProbePaths) != 0 {
			t.Errorf("people's typos kept as probes: %v", s.State.ProbePaths)
		}
	})
	t.Run("a wordlist from a browser user agent is a SCANNER without an event", func(t *testing.T) {
		s := newSession(chrome)
		var out detect.Outcome
		for i := range detect.ProbingThreshold {
			s, out = detect.Observe(s, notFound(fmt.Sprintf("/wp-admin/%d.php", i), chrome, time.Duration(i)*time.Second))
		}
		if !slices.Contains(s.Fired, detect.SignalSystematicProbing) || out.Verdict.Classification != detect.ClassScanner || detect.Detected(out.Verdict) {
			t.Fatalf("fired %v, verdict %+v", s.Fired, out.Verdict)
		}
	})
	t.Run("a script's unknown paths count", func(t *testing.T) {
		s := newSession("Go-http-client/1.1")
		var out detect.Outcome
		for i := range detect.ProbingThreshold {
			s, out = detect.Observe(s, notFound(fmt.Sprintf("/page-%d", i), s.UA, time.Duration(i)*time.Second))
		}
		if out.Verdict.Classification != detect.ClassScanner || !detect.Detected(out.Verdict) {
			t.Fatalf("verdict %+v", out.Verdict)
		}
	})
	t.Run("probes spread beyond the window are forgotten", func(t *testing.T) {
		s := newSession("curl/8.5.0")
		var out detect.Outcome
		for i := range 3 * detect.ProbingThreshold {
			s, out = detect.Observe(s, notFound(fmt.Sprintf("/.env.%d", i), s.UA, time.Duration(i)*2*time.Minute))
			if len(out.Firings) > 0 && out.Firings[0].Name == detect.SignalSystematicProbing {
				t.Fatalf("probe %d fired %v; probes 2 min apart hold at most 6 in a 10-min window", i, names(out.Firings))
			}
		}
		if n := len(s.State.ProbePaths); n > 6 || n != len(s.State.ProbeAt) {
			t.Fatalf("%d probes kept (%d times), want the window's", n, len(s.State.ProbeAt))
		}
	})
	t.Run("a stranger's probes count on its first session hit", func(t *testing.T) {
		s := newSession("curl/8.5.0")
		for i := range detect.ProbingThreshold {
			s.State.ProbePaths = append(s.State.ProbePaths, fmt.Sprintf("/.env.%d", i))
			s.State.ProbeAt = append(s.State.ProbeAt, t0.Unix()+int64(i))
		}
		page := request("/internal/docs/billing", time.Minute)
		page.Kind, page.UA = "decoy", s.UA
		s, out := detect.Observe(s, page)
		if !slices.Contains(names(out.Firings), detect.SignalSystematicProbing) {
			t.Fatalf("fired %v", names(out.Firings))
		}
		// Probes from long before count for nothing.
		old := newSession("curl/8.5.0")
		old.State.ProbePaths, old.State.ProbeAt = s.State.ProbePaths, s.State.ProbeAt
		page.At = t0.Add(time.Hour)
		if _, out := detect.Observe(old, page); slices.Contains(names(out.Firings), detect.SignalSystematicProbing) {
			t.Fatalf("probes an hour old fired %v", names(out.Firings))
		}
	})
	t.Run("a state stored without probe times counts them as recent", func(t *testing.T) {
		s := newSession("curl/8.5.0")
		for i := range detect.ProbingThreshold - 1 {
			s.State.ProbePaths = append(s.State.ProbePaths, fmt.Sprintf("/old-%d", i))
		}
		s, _ = detect.Observe(s, notFound("/new", s.UA, time.Hour))
		if !slices.Contains(s.Fired, detect.SignalSystematicProbing) {
			t.Fatalf("fired %v", s.Fired)
		}
	})
}

// A person opening a link llms.txt or robots.txt shows is reading, not following a
// hidden link; a program doing the same is still a CALLBACK_HIT.
func TestObserveVisibleLinks(t *testing.T) {
	link := token(detect.UseCallback)
	link.Visible = true
	s, out := detect.Observe(newSession(chrome), request("/docs/print/x", 4*time.Second, link))
	if !slices.Equal(names(out.Firings), []string{detect.SignalVisibleLinkOpened}) || out.Verdict.Classification != detect.ClassHuman || out.Tripwires != 0 {
		t.Fatalf("person: fired %v, verdict %+v", names(out.Firings), out.Verdict)
	}
	_ = s
	bot := request("/docs/print/x", 300*time.Millisecond, link)
	bot.UA = "python-requests/2.32.3"
	_, out = detect.Observe(newSession(bot.UA), bot)
	if !slices.Contains(names(out.Firings), detect.SignalCallbackHit) || out.Verdict.Classification != detect.ClassBot {
		t.Fatalf("script: fired %v, verdict %+v", names(out.Firings), out.Verdict)
	}
}

func FuzzClassifyProbe(f *testing.F) {
	f.Add("/internal/docs/biling", "/internal/docs/billing")
	f.Add("/.git/config", "/mcp")
	f.Add("/"+strings.Repeat("é", 200), "/é")
	f.Fuzz(func(t *testing.T, path, known string) {
		c := detect.ClassifyProbe(path, []string{known})
		if c < detect.ProbeTypo || c > detect.ProbeWordlist {
			t.Fatalf("class %d", c)
		}
		if path == known && c != detect.ProbeTypo {
			t.Fatalf("a known path is not its own typo: %d", c)
		}
		_ = detect.ProbeCounts(path, "curl/8", []string{known})
	})
}

func BenchmarkProbeCounts(b *testing.B) {
	linked := make([]string, 256) // a session's most linked paths
	for i := range linked {
		linked[i] = fmt.Sprintf("/wiki/engineering/page-%03d", i)
	}
	paths := []string{"/wiki/engineering/page-01x", "/.git/config", "/about-us", "/internal/docs/biling"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		detect.ProbeCounts(paths[i%len(paths)], chrome, knownPaths, linked)
	}
}
