package detect

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"
)

// benchUAs is a traffic-like mix: mostly browsers, then bots of every kind.
var benchUAs = func() []string {
	var out []string
	for _, c := range uaCases {
		out = append(out, c.ua)
	}
	return out
}()

func BenchmarkLookupUA(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		LookupUA(benchUAs[i%len(benchUAs)])
		i++
	}
}

// BenchmarkClassifyHit is the detection cost of one hit: recognise the user
// agent, turn it into a signal, build the evidence and judge it.
func BenchmarkClassifyHit(b *testing.B) {
	addr := netip.MustParseAddr("203.0.113.7")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ua := benchUAs[i%len(benchUAs)]
		i++
		a := LookupUA(ua)
		signals := make(map[string]int, 4)
		if s := UASignal(a); s != "" {
			signals[s] = 1
		}
		if UnverifiedClaim(a, addr) {
			signals[SignalUnverifiedBotClaim] = 1
		}
		if i%3 == 0 {
			signals[SignalCallbackHit] = 1
			signals[FollowUpSignal(1500_000_000)] = 1
		}
		Judge(Evidence{Signals: signals, Agent: a, Hits: 3})
	}
}

// BenchmarkCheckClaim is a claimed crawler checked against the reverse DNS the listener
// found and the range set in effect (an atomic load), verified and not.
func BenchmarkCheckClaim(b *testing.B) {
	a := LookupUA("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	in, out := netip.MustParseAddr("66.249.66.1"), netip.MustParseAddr("203.0.113.7")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i++; i%2 == 0 {
			_ = CheckClaim(a, in, DNSPending, "")
		} else {
			_ = CheckClaim(a, out, DNSWrongDomain, "crawl.example.net")
		}
	}
}

func BenchmarkAnalyzePrompt(b *testing.B) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		AnalyzePrompt(promptCases[i%len(promptCases)].text)
		i++
	}
}

func FuzzLookupUA(f *testing.F) {
	for _, c := range uaCases {
		f.Add(c.ua)
	}
	f.Add(strings.Repeat("GPTBot/1.0 ", 200))
	f.Add("\xff\xfe Googlebot\x00/2.1")
	f.Fuzz(func(t *testing.T, ua string) {
		a := LookupUA(ua)
		if int(a.Kind) >= len(kindNames) {
			t.Fatalf("kind %d", a.Kind)
		}
		if a.Kind != KindUnknown && a.Category != a.Kind.String() {
			t.Fatalf("category %q for kind %v", a.Category, a.Kind)
		}
		if len(ua) > MaxUALength && LookupUA(ua[:MaxUALength]) != a {
			t.Fatal("input beyond MaxUALength changed the result")
		}
		_ = UASignal(a)
		_ = UnverifiedClaim(a, netip.MustParseAddr("66.249.66.1"))
	})
}

func FuzzAnalyzePrompt(f *testing.F) {
	for _, c := range promptCases {
		f.Add(c.text)
	}
	for _, c := range leakCases {
		f.Add(c.text)
	}
	for _, n := range promptNegatives {
		f.Add(n)
	}
	f.Add(`\u00e9\ud83d\\\\u12`)
	f.Add("You are \xff, an assistant for \xfe\xfd's 'S")
	f.Fuzz(func(t *testing.T, text string) {
		p, _ := AnalyzePrompt(text)
		if len(p.Text) > MaxPromptBytes || !strings.HasPrefix(text, p.Text) {
			t.Fatal("Text is not a bounded prefix of the input")
		}
		if utf8.ValidString(text) && !utf8.ValidString(p.Text) {
			t.Fatal("cut inside a rune")
		}
		if p.Score < 0 || p.Score > 100 || len(p.Hash) != 64 || len(p.Operator) > maxOperatorLen {
			t.Fatalf("%+v", p)
		}
		if strings.TrimSpace(p.Operator) != p.Operator {
			t.Fatalf("operator %q not trimmed", p.Operator)
		}
		_ = ExtractModel(text)
		_ = ExtractOperator(text)
	})
}
