package detect

import (
	"testing"
	"time"
)

func TestIsTripwire(t *testing.T) {
	tripwire := []string{SignalCallbackHit, SignalInjectionFollowed, SignalSystemPromptLeaked, SignalCredentialUsed, SignalToolInvoked}
	supporting := []string{
		SignalKnownAIAgentUA, SignalKnownAIAssistantUA, SignalKnownAICrawlerUA, SignalSearchCrawlerUA, SignalLinkPreviewUA,
		SignalAutomationClientUA, SignalHeadlessBrowserUA, SignalEmptyUA, SignalScannerUA, SignalUnverifiedBotClaim, SignalCrawlerVerified,
		SignalSignedAgentVerified, SignalSignatureInvalid, SignalSignatureUnverifiable,
		SignalRobotsDisallowIgnored, SignalMachineSpeedFollowup, SignalLLMSpeedFollowup, SignalHumanSpeedFollowup,
		SignalSystematicProbing, SignalVisibleLinkOpened, SignalClientStackMismatch,
	}
	for _, s := range tripwire {
		if !IsTripwire(s) {
			t.Errorf("%s must be a tripwire", s)
		}
	}
	for _, s := range supporting {
		if IsTripwire(s) {
			t.Errorf("%s must not be a tripwire", s)
		}
	}
	for _, s := range []string{"", "callback_hit", "NOPE"} {
		if IsTripwire(s) {
			t.Errorf("IsTripwire(%q) = true", s)
		}
	}
	if got := len(Signals()); got != len(tripwire)+len(supporting) {
		t.Errorf("Signals() has %d entries, want %d", got, len(tripwire)+len(supporting))
	}
}

// Every signal has a weight and a meaning; every weight names a signal.
func TestSignalTableAndWeightsAgree(t *testing.T) {
	names := map[string]bool{}
	for _, s := range Signals() {
		names[s.Name] = true
		if _, ok := Weights[s.Name]; !ok {
			t.Errorf("%s has no weight", s.Name)
		}
		if s.Meaning == "" {
			t.Errorf("%s has no meaning", s.Name)
		}
	}
	for name := range Weights {
		if !names[name] {
			t.Errorf("weight for unknown signal %s", name)
		}
	}
	// The copy is the caller's.
	s := Signals()
	s[0].Name = "changed"
	if Signals()[0].Name == "changed" {
		t.Error("Signals must return a copy")
	}
}

func TestUASignal(t *testing.T) {
	cases := map[Kind]string{
		KindUnknown:       "",
		KindEmpty:         SignalEmptyUA,
		KindAIAgent:       SignalKnownAIAgentUA,
		KindAIAssistant:   SignalKnownAIAssistantUA,
		KindAISearch:      SignalKnownAICrawlerUA,
		KindAICrawler:     SignalKnownAICrawlerUA,
		KindSearchCrawler: SignalSearchCrawlerUA,
		KindAutomation:    SignalAutomationClientUA,
		KindHeadless:      SignalHeadlessBrowserUA,
		KindScanner:       SignalScannerUA,
		KindLinkPreview:   SignalLinkPreviewUA,
	}
	for k, want := range cases {
		if got := UASignal(Agent{Kind: k}); got != want {
			t.Errorf("UASignal(%v) = %q, want %q", k, got, want)
		}
	}
	if got := UASignal(LookupUA("Mozilla/5.0 (compatible; Claude-User/1.0)")); got != SignalKnownAIAssistantUA {
		t.Errorf("Claude-User: %q", got)
	}
}

func TestFollowUpSignal(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, ""},
		{0, SignalMachineSpeedFollowup},
		{40 * time.Millisecond, SignalMachineSpeedFollowup},
		{999 * time.Millisecond, SignalMachineSpeedFollowup},
		{time.Second, SignalLLMSpeedFollowup},
		{7 * time.Second, SignalLLMSpeedFollowup},
		{90 * time.Second, SignalLLMSpeedFollowup},
		{90*time.Second + time.Millisecond, SignalHumanSpeedFollowup},
		{time.Hour, SignalHumanSpeedFollowup},
	}
	for _, c := range cases {
		if got := FollowUpSignal(c.d); got != c.want {
			t.Errorf("FollowUpSignal(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if ProbingThreshold != 8 {
		t.Errorf("ProbingThreshold = %d", ProbingThreshold)
	}
}
