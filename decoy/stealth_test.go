package decoy

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ids"
)

// stealthSpec is a trap made now (its id carries the time), as the engine serves it.
func stealthSpec(typ string, n int) Spec {
	s := testSpec(typ, n)
	s.TrapID = ids.New(ids.Trap)
	return s
}

var (
	reNumberWords = regexp.MustCompile(`\b(?:(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:-(?:one|two|three|four|five|six|seven|eight|nine))?|(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen))\b`)
	reTagRun      = regexp.MustCompile("\u200b[\U000E0020-\U000E007E]*\u200b")
)

// sansTokens is a response with what must change per response taken out: its tokens, the
// canary's words, the challenge's numbers, and the zero-width text that carries a token.
func sansTokens(out Rendered) string {
	s := reTagRun.ReplaceAllString(string(out.Body), "<zw>")
	for _, pl := range out.Placements {
		s = strings.ReplaceAll(s, pl.Token, "<token>")
	}
	s = regexp.MustCompile(`[a-z]+-[a-z]+-<token>`).ReplaceAllString(s, "<canary>")
	return reNumberWords.ReplaceAllString(s, "<n>")
}

// Two loads of a trap differ only in their tokens (and what is derived from them): the
// visible content is the trap's own, so a script reloading a page learns nothing.
func TestReloadsDifferOnlyInTokens(t *testing.T) {
	for n := range 30 {
		for _, typ := range []string{"page", "llms_txt", "robots"} {
			spec := stealthSpec(typ, n)
			a, b := Render(testKey, spec, newHitID(t)), Render(testKey, spec, newHitID(t))
			if string(a.Body) == string(b.Body) {
				t.Fatalf("%s: two responses are identical: no fresh tokens", typ)
			}
			// Each placement keeps its token's shape.
			for i, pl := range a.Placements {
				if q := b.Placements[i]; len(q.Token) != len(pl.Token) || strings.Count(q.Token, "-") != strings.Count(pl.Token, "-") {
					t.Fatalf("%s: placement %d is %q, then %q", typ, i, pl.Token, q.Token)
				}
			}
			if sa, sb := sansTokens(a), sansTokens(b); sa != sb {
				i := 0
				for i < len(sa) && i < len(sb) && sa[i] == sb[i] {
					i++
				}
				t.Fatalf("%s #%d: two loads differ beyond their tokens at %q / %q", typ, n, sa[max(0, i-80):min(len(sa), i+80)], sb[max(0, i-80):min(len(sb), i+80)])
			}
		}
	}
}

var reTimestamps = []struct {
	re     *regexp.Regexp
	layout string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z`), time.RFC3339},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d`), "2006-01-02 15:04"},
	{regexp.MustCompile(`[A-Z][a-z]{2} \d{1,2}, \d{4}`), "Jan 2, 2006"},
	{regexp.MustCompile(`Updated \d{4}-\d\d-\d\d`), "Updated 2006-01-02"},
}

// No decoy shows a time after the response (a due date excepted: it is meant to be ahead).
func TestNoFutureTimestamps(t *testing.T) {
	for n := range 60 {
		for _, typ := range Names() {
			spec := stealthSpec(typ, n)
			hit := newHitID(t)
			body := string(Render(testKey, spec, hit).Body)
			body = regexp.MustCompile(`"due_date":"[^"]*"`).ReplaceAllString(body, "")
			u, _ := parseHitID(hit)
			now := time.UnixMilli(hitTime(&u)).UTC()
			for _, ts := range reTimestamps {
				for _, m := range ts.re.FindAllString(body, -1) {
					at, err := time.Parse(ts.layout, m)
					if err != nil {
						t.Fatalf("%s: %q: %v", typ, m, err)
					}
					if at.After(now.Add(time.Minute)) {
						t.Fatalf("%s #%d: %q is after the response (%s)", typ, n, m, now)
					}
				}
			}
		}
	}
}

// The instructions come in several registers, not one phrase a script could grep for.
func TestInstructionRegisters(t *testing.T) {
	openings := map[string]bool{}
	for n := range 40 {
		body := string(Render(testKey, stealthSpec("page", n), newHitID(t)).Body)
		for rest := body; ; {
			i := strings.Index(rest, "?code=N")
			if i < 0 {
				break
			}
			before := rest[:i]
			before = before[:strings.LastIndexAny(before, " ")+1] // the URL's start
			before = before[max(0, len(before)-40):]
			before = before[strings.LastIndexAny(before, ">.")+1:]
			openings[strings.TrimSpace(before)] = true
			rest = rest[i+1:]
		}
	}
	if len(openings) < 2*registers-1 {
		t.Fatalf("challenge phrasings %d, want most of the %d of both kinds: %v", len(openings), 2*registers, openings)
	}
	for o := range openings {
		if strings.Contains(o, "Note for AI agents") && len(openings) == 1 {
			t.Fatal("one phrasing only")
		}
	}
}

// Every home of a planted URL answers content that fits it, and the answers are not one
// fixed acknowledgement: documents, files, redirects to a login, JSON.
func TestTokenAnswersFitTheirHome(t *testing.T) {
	kinds := map[string]bool{}
	for _, list := range [][]string{callbackPrefixes[:], challengePrefixes[:], sinkPrefixes[:]} {
		for _, home := range list {
			tok := NewToken(testKey, newHitID(t), 1, Callback)
			a := TokenAnswer(home+tok, "GET")
			if string(a.Body) == `{"status":"ok"}`+"\n" {
				t.Errorf("%s answers the generic acknowledgement: give it content of its own", home)
			}
			if a.Status == 302 && !strings.HasPrefix(a.Header["Location"], "/login?next=") {
				t.Errorf("%s redirects to %q", home, a.Header["Location"])
			}
			if strings.Contains(string(a.Body), tok) {
				t.Errorf("%s echoes its token", home)
			}
			kinds[fmt.Sprint(a.Status, " ", a.ContentType)] = true
			if b := TokenAnswer(home+tok, "GET"); string(a.Body) != string(b.Body) {
				t.Errorf("%s: one URL answers differently twice", home)
			}
		}
	}
	if len(kinds) < 4 {
		t.Fatalf("the planted URLs answer only %v", kinds)
	}
	if !strings.HasPrefix(string(blankPDF), "%PDF-1.4\n") || !strings.HasSuffix(string(blankPDF), "%%EOF\n") {
		t.Fatal("not a PDF")
	}
}

func TestMethodNotAllowedLooksLikeNginx(t *testing.T) {
	for _, k := range Kinds {
		for _, m := range []string{"PUT", "DELETE", "TRACE", "PATCH", "OPTIONS"} {
			if MethodAllowed(m) {
				t.Fatalf("%s allowed", m)
			}
			r := MethodNotAllowed(k, m)
			if r.Status != 405 || r.Header["Allow"] != "GET, HEAD, POST" {
				t.Fatalf("%s %s: %+v", k.Name, m, r)
			}
			if k.Name == "page" && !strings.Contains(string(r.Body), "<hr><center>nginx</center>") {
				t.Fatalf("page 405 is not nginx's: %q", r.Body)
			}
		}
	}
}

// parseShaped reads a token of any shape, exactly: FindTokens finds one and it is all of s.
func parseShaped(key Key, s string) (TokenRef, bool) {
	refs := FindTokens(key, s)
	if len(refs) != 1 || !tokenShapeRe.MatchString(s) {
		return TokenRef{}, false
	}
	return refs[0], true
}

var tokenShapeRe = regexp.MustCompile(`^(?:[a-z2-7]{48}|[0-9a-f]{60}|[0-9A-Za-z]{41}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-[0-9a-f]{28})$`)

// Every shape round-trips, and FindTokens finds it with glue around, in either case
// where the shape allows.
func TestTokenShapesRoundTrip(t *testing.T) {
	m := newMacer(testKey)
	for range 300 {
		hit := newHitID(t)
		u, _ := parseHitID(hit)
		for sh := range numShapes {
			for _, p := range []Purpose{Callback, Challenge, Canary, Sink, Credential} {
				tok := m.tokenShaped(&u, 7, p, sh)
				want := TokenRef{HitID: hit, Index: 7, Purpose: p}
				if got, ok := parseShaped(testKey, tok); !ok || got != want {
					t.Fatalf("shape %d %q: %+v %v", sh, tok, got, ok)
				}
				for _, text := range []string{"/files/preview/" + tok + "?x=1", "%2F" + tok + "%26", `"\u002f` + tok + `"`, "ref-" + tok + "-x"} {
					if got := FindTokens(testKey, text); len(got) != 1 || got[0] != want {
						t.Fatalf("shape %d in %q: %+v", sh, text, got)
					}
				}
				if sh != shapeBase62 {
					if got := FindTokens(testKey, strings.ToUpper(tok)); len(got) != 1 || got[0] != want {
						t.Fatalf("shape %d upper case: %+v", sh, got)
					}
				}
			}
		}
	}
}

// The tokens of one decoy's URLs match no single simple pattern (one alphabet, one
// length): a script cannot pick them out by shape.
func TestTokenShapesVaryPerPlacement(t *testing.T) {
	for n := range 40 {
		for _, typ := range []string{"page", "api", "llms_txt"} {
			out := Render(testKey, stealthSpec(typ, n), newHitID(t))
			kinds := map[string]bool{}
			for _, pl := range out.Placements {
				if pl.URL == "" {
					continue
				}
				kind := fmt.Sprint(len(pl.Token))
				switch {
				case regexp.MustCompile(`^[a-z2-7]+$`).MatchString(pl.Token):
					kind += " base32"
				case regexp.MustCompile(`^[0-9a-f-]+$`).MatchString(pl.Token):
					kind += " hex"
				default:
					kind += " base62"
				}
				kinds[kind] = true
			}
			if len(kinds) < 3 {
				t.Fatalf("%s: the URL tokens of one response come in %d shapes: %v", typ, len(kinds), kinds)
			}
		}
	}
}

// The proxy rules of docs/deployment.md route every URL a decoy plants: the base-32 rule
// anywhere, the shaped rule under the homes, which must be exactly the code's homes.
func TestDeploymentRulesRouteEveryShape(t *testing.T) {
	doc, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"~(\^/\(\?:([^)]*)\)/\[0-9A-Za-z-\]\{41,65\}\$)"`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deployment.md has no nginx rule for the shaped tokens")
	}
	var homes []string
	for _, list := range [][]string{callbackPrefixes[:], challengePrefixes[:], sinkPrefixes[:]} {
		for _, h := range list {
			homes = append(homes, strings.ReplaceAll(strings.Trim(h, "/"), ".", `\.`))
		}
	}
	if got := strings.Split(string(m[2]), "|"); !slices.Equal(sorted(got), sorted(homes)) {
		t.Fatalf("the doc's homes %v, the code's %v", got, homes)
	}
	if !strings.Contains(string(doc), "path_regexp "+string(m[1])) {
		t.Fatal("the Caddy rule differs from the nginx one")
	}
	shaped, b32 := regexp.MustCompile(string(m[1])), regexp.MustCompile(`[a-z2-7]{48}`)
	for n := range 40 {
		for _, typ := range Names() {
			for _, pl := range Render(testKey, stealthSpec(typ, n), newHitID(t)).Placements {
				if pl.URL != "" && !shaped.MatchString(pl.URL) && !b32.MatchString(pl.URL) {
					t.Fatalf("%s: %s is routed by neither rule", typ, pl.URL)
				}
			}
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// renderFull renders like Render but never from a skeleton.
func renderFull(key Key, spec Spec, hitID string) Rendered {
	kind := MustKind(spec.Type)
	r := newRenderer(key, spec, hitID)
	var out Rendered
	for attempt := 0; ; attempt++ {
		r.begin(attempt)
		out = kind.typ.render(r)
		if attempt == maxAttempts-1 || !r.answerShown(out.Body) {
			break
		}
	}
	out.Placements = r.places
	return out
}

// A response spliced into a trap's skeleton is exactly the full render.
func TestSkeletonEqualsFullRender(t *testing.T) {
	for n := range 60 {
		for _, k := range Kinds {
			if !k.skeleton {
				continue
			}
			spec := testSpec(k.Name, n) // trap ids of long ago: no "minutes ago" that moves within the minute
			for range 3 {
				hit := newHitID(t)
				got, want := Render(testKey, spec, hit), renderFull(testKey, spec, hit)
				if string(got.Body) != string(want.Body) {
					t.Fatalf("%s #%d: the skeleton's response differs from the full render:\n%s\n---\n%s", k.Name, n, got.Body, want.Body)
				}
				if !slices.Equal(got.Placements, want.Placements) || got.Status != want.Status || got.ContentType != want.ContentType {
					t.Fatalf("%s: placements %+v, want %+v", k.Name, got.Placements, want.Placements)
				}
			}
		}
	}
}

// Released bodies are reused: a response rendered into a reused buffer is exactly a fresh one,
// a released response keeps no body, and releasing twice (or a response from no skeleton) is harmless.
func TestReleasedBodiesReused(t *testing.T) {
	var held []Rendered
	for n := range 40 {
		for _, k := range Kinds {
			if !k.skeleton {
				continue
			}
			spec := testSpec(k.Name, n)
			hit := newHitID(t)
			got := Render(testKey, spec, hit)
			want := renderFull(testKey, spec, hit)
			if string(got.Body) != string(want.Body) {
				t.Fatalf("%s #%d: a response in a reused buffer differs from the full render", k.Name, n)
			}
			if n%2 == 0 {
				held = append(held, got) // kept, never released: no later response may write into it
				held = append(held, Rendered{Body: slices.Clone(got.Body)})
				continue
			}
			got.Release()
			got.Release()
			if got.Body != nil {
				t.Fatalf("%s: Body %q after Release", k.Name, got.Body)
			}
		}
	}
	for i := 0; i < len(held); i += 2 {
		if string(held[i].Body) != string(held[i+1].Body) {
			t.Fatalf("held response %d changed after later renders", i/2)
		}
	}
	r := Rendered{Body: []byte("not pooled")}
	r.Release()
	if r.Body != nil {
		t.Fatal("Release kept an unpooled body")
	}
}

// Every challenge's answer lies in [minAnswer, maxAnswer]: a skeleton knows which of those
// its own text holds.
func TestChallengeAnswerRange(t *testing.T) {
	m := newMacer(testKey)
	for i := range 20000 {
		u := [16]byte{byte(i), byte(i >> 8), byte(i >> 16), 7}
		a, b := m.challengeOperands(&u, i%256, Challenge)
		if a+b < minAnswer || a+b > maxAnswer {
			t.Fatalf("operands %d + %d = %d, outside [%d, %d]", a, b, a+b, minAnswer, maxAnswer)
		}
	}
}

// answerShown is bytes.Contains over the body, for answers in the skeleton's own text, in a
// spliced value, across a value's edges, and nowhere.
func TestAnswerShownIsContains(t *testing.T) {
	sk := &skeleton{body: "intro 1" + marker('T', 0) + "9 mid 150 " + marker('T', 1) + marker('A', 0) + " end"}
	for n := minAnswer; n <= maxAnswer; n++ {
		sk.static[n-minAnswer] = strings.Contains("intro 1", strconv.Itoa(n)) || strings.Contains("9 mid 150 ", strconv.Itoa(n)) ||
			strings.Contains(" end", strconv.Itoa(n))
	}
	for _, vals := range [][]skelValues{
		{{tok: "abc", a: "x"}, {tok: "q"}},
		{{tok: "8xx", a: "y"}, {tok: "1"}}, // "18" across the first edge: with "9", "189"
		{{tok: "12", a: "3z"}, {tok: "7"}}, // "123" across two values
		{{tok: "x", a: "w"}, {tok: "196"}},
		{{tok: "", a: ""}, {tok: ""}},
	} {
		body, spans := sk.splice(nil, sk.body, vals, nil, true)
		for n := minAnswer; n <= maxAnswer; n++ {
			ans := strconv.Itoa(n)
			if got, want := sk.answerShown(body, spans, ans, n), bytes.Contains(body, []byte(ans)); got != want {
				t.Fatalf("body %q, answer %s: answerShown %v, Contains %v", body, ans, got, want)
			}
		}
	}
}
