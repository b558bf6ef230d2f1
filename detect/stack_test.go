package detect_test

import (
	"slices"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
)

// A browser claim is weighed against the stack the connection proved: a library's stack
// under a browser's user agent is a BOT (never an AI class), the truth is HUMAN, an unknown
// stack or another browser's says nothing, and the mismatch adds confidence to what else fired.
func TestClientStackMismatch(t *testing.T) {
	const (
		firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
		iosCrio = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1"
		gptBot  = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)"
	)
	page := func(ua, stack string) detect.Observation {
		o := request("/docs", 0)
		o.Kind, o.UA, o.Stack = "decoy", ua, stack
		return o
	}
	for _, tt := range []struct {
		name, ua, stack string
		fires           bool
		class           string
	}{
		{"Chrome on Python's stack", chrome, "python", true, detect.ClassBot},
		{"Chrome on curl's stack", chrome, "curl", true, detect.ClassBot},
		{"Firefox on Go's stack", firefox, "go", true, detect.ClassBot},
		{"Chrome on Chromium's stack", chrome, "chromium", false, detect.ClassHuman},
		{"Chrome on Firefox's stack (a user-agent switcher)", chrome, "firefox", false, detect.ClassHuman},
		{"Chrome on iOS on Safari's stack", iosCrio, "safari", false, detect.ClassHuman},
		{"Chrome on an unknown stack", chrome, "", false, detect.ClassHuman},
		{"curl's own user agent on curl", "curl/8.5.0", "curl", false, detect.ClassBot},
		{"GPTBot on Python: its claim is checked by address (here false), not by stack", gptBot, "python", false, detect.ClassBot},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, out := detect.Observe(newSession(tt.ua), page(tt.ua, tt.stack))
			fired := slices.Contains(s.Fired, detect.SignalClientStackMismatch)
			if fired != tt.fires || out.Verdict.Classification != tt.class {
				t.Fatalf("mismatch fired %v, %s (%v); want %v, %s", fired, out.Verdict.Classification, s.Fired, tt.fires, tt.class)
			}
			if fired && out.Verdict.Confidence != 80 {
				t.Errorf("confidence %d, want 80", out.Verdict.Confidence)
			}
		})
	}
	// With a tripwire: still what the tripwire says, more surely.
	hidden := func(stack string) detect.Verdict {
		o := request("/c", 30*time.Second, token(detect.UseCallback))
		o.Stack = stack
		_, out := detect.Observe(newSession(chrome), o)
		return out.Verdict
	}
	honest, forged := hidden("chromium"), hidden("python")
	if forged.Classification != detect.ClassBot || forged.Confidence <= honest.Confidence {
		t.Errorf("a hidden link from a forged browser: %+v; from a real one: %+v", forged, honest)
	}
}
