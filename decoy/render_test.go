package decoy

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func testSpec(typ string, n int) Spec {
	return Spec{
		TrapID:   fmt.Sprintf("trp_01jqz8k7v3m2n4p5q6r7s8t%03d", n%1000)[:30],
		Title:    []string{"Customer exports", "Payroll runbook", "", "Vendor access"}[n%4],
		Type:     typ,
		Path:     []string{Path(typ), "/wiki/engineering/keys-ab12", "/admin/portal/users-x9q2", "/internal/api/billing-33zz", "/config/settings.json"}[n%5],
		Host:     []string{"docs.acme.io", "10.0.0.4:8080", "", "intranet.northwind-corp.com"}[n%4],
		Disallow: []string{"/admin/portal/users-x9q2", "/api/private/keys-7k2m"},
	}
}

// required purposes per type.
var requiredPurposes = map[string][]Purpose{
	"page":       {Callback, Challenge, Canary, Sink},
	"api":        {Callback, Challenge, Canary, Sink, Credential},
	"llms_txt":   {Callback, Challenge, Canary, Sink},
	"robots":     {Callback},
	"credential": {Credential},
	"mcp":        {Tool},
}

var numberWordRe = regexp.MustCompile(`(?:sum of|N is) ([a-z-]+) (?:and|plus) ([a-z-]+)`)

func wordsToNumber(t *testing.T, w string) int {
	for n := range 100 {
		if numberWords(n) == w {
			return n
		}
	}
	t.Fatalf("%q is not a number in words", w)
	return 0
}

// checkPlacements checks that every placement's token parses to (hit, index, purpose), sits
// in the response where it says, and that the required purposes are present.
func checkPlacements(t *testing.T, typ string, out Rendered, hit string) {
	t.Helper()
	body := string(out.Body)
	seen := map[int]bool{}
	have := map[Purpose]bool{}
	for _, pl := range out.Placements {
		ref, ok := parsePlaced(testKey, pl.Token, hit)
		if !ok || ref != (TokenRef{HitID: hit, Index: pl.Index, Purpose: pl.Purpose}) {
			t.Fatalf("%s: placement %+v parses to %+v, %v", typ, pl, ref, ok)
		}
		if seen[pl.Index] {
			t.Fatalf("%s: index %d used twice", typ, pl.Index)
		}
		seen[pl.Index] = true
		have[pl.Purpose] = true
		if WhereLabel(pl.Where) == "" { // shared, or the kind's own (About.Wheres)
			t.Fatalf("%s: unknown where %q", typ, pl.Where)
		}
		switch pl.Purpose {
		case Callback, Challenge, Sink:
			if !strings.HasPrefix(pl.URL, "/") || !strings.HasSuffix(pl.URL, "/"+pl.Token) {
				t.Fatalf("%s: %v placement URL %q", typ, pl.Purpose, pl.URL)
			}
		default:
			if pl.URL != "" {
				t.Fatalf("%s: %v placement has URL %q", typ, pl.Purpose, pl.URL)
			}
		}
		where := body
		switch pl.Where {
		case WhereHeader:
			where = fmt.Sprint(out.Header)
		case WhereZeroWidth:
			where = DecodeTagText(string(out.Body))
			if strings.Contains(body, pl.Token) {
				t.Fatalf("%s: zero-width token is in the body in clear", typ)
			}
		}
		if !strings.Contains(where, pl.Token) {
			t.Fatalf("%s: token of %+v is not in the response", typ, pl)
		}
		refIdx := TokenRef{HitID: hit, Index: pl.Index, Purpose: pl.Purpose}
		switch pl.Purpose {
		case Canary:
			if !strings.Contains(where, CanaryPhrase(testKey, refIdx)) {
				t.Fatalf("%s: canary phrase missing", typ)
			}
		case Credential:
			if !strings.Contains(where, CredentialValue(testKey, refIdx)) {
				t.Fatalf("%s: credential value missing", typ)
			}
		case Challenge:
			ans := ChallengeAnswer(testKey, refIdx)
			if strings.Contains(body, ans) {
				t.Fatalf("%s: challenge answer %s is literal in the body", typ, ans)
			}
			// Do what an agent would: read the instruction after the URL and add the numbers.
			text := body
			if i := strings.Index(text, pl.URL); i >= 0 {
				text = text[i:]
			}
			m := numberWordRe.FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("%s: no numbers in words after the challenge URL", typ)
			}
			if got := fmt.Sprint(wordsToNumber(t, m[1]) + wordsToNumber(t, m[2])); got != ans {
				t.Fatalf("%s: the instruction adds up to %s, ChallengeAnswer is %s", typ, got, ans)
			}
		}
	}
	for _, p := range requiredPurposes[typ] {
		if !have[p] {
			t.Fatalf("%s: no %v placement", typ, p)
		}
	}
	if typ == "page" || typ == "api" || typ == "llms_txt" {
		if len(out.Placements) < 4 {
			t.Fatalf("%s: %d placements", typ, len(out.Placements))
		}
	}
}

func checkFormat(t *testing.T, typ string, out Rendered) {
	t.Helper()
	if out.Status != 200 || out.ContentType == "" || len(out.Body) == 0 {
		t.Fatalf("%s: status %d, type %q, %d bytes", typ, out.Status, out.ContentType, len(out.Body))
	}
	if !utf8.Valid(out.Body) {
		t.Fatalf("%s: body is not UTF-8", typ)
	}
	lower := strings.ToLower(string(out.Body))
	for _, banner := range []string{"flytrap", "honeypot", "golang", "go-http", "generator"} {
		if strings.Contains(lower, banner) {
			t.Fatalf("%s: body names %q", typ, banner)
		}
	}
	switch {
	case strings.HasPrefix(out.ContentType, "text/html"):
		checkHTML(t, out.Body)
	case out.ContentType == "application/json":
		var v map[string]any
		if err := json.Unmarshal(out.Body, &v); err != nil {
			t.Fatalf("%s: invalid JSON: %v\n%s", typ, err, out.Body)
		}
	}
}

var voidElements = map[string]bool{"meta": true, "link": true, "input": true, "br": true, "hr": true, "img": true}

type htmlInfo struct {
	visible   string   // the text a person sees
	links     []string // href/src/action values outside comments
	hiddenCls []string
	// srText is the text of the screen-reader note: out of sight, but read aloud.
	srText []string
}

// The hidden classes: display:none (hidden from everyone), off screen (must be
// aria-hidden) and the screen-reader-only clip (read aloud: short, no link).
var (
	srURL        = regexp.MustCompile(`/\S+\?code=N`)
	hiddenRuleRe = regexp.MustCompile(`\.([a-zA-Z0-9_-]+)\{(display:none|position:absolute!important;left:-9999px|position:absolute!important;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;clip:rect\(0,0,0,0\))`)
)

// checkHTML checks well-formedness with a small tokenizer (tags balanced and properly
// nested, attributes quoted, no stray '<', comments closed) and returns what a person sees.
func checkHTML(t *testing.T, b []byte) htmlInfo {
	t.Helper()
	s := string(b)
	var info htmlInfo
	var offCls, srCls string
	for _, m := range hiddenRuleRe.FindAllStringSubmatch(s, -1) {
		info.hiddenCls = append(info.hiddenCls, m[1])
		switch {
		case strings.HasPrefix(m[2], "position:absolute!important;left"):
			offCls = m[1]
		case strings.HasPrefix(m[2], "position"):
			srCls = m[1]
		}
	}
	if len(info.hiddenCls) != 3 || offCls == "" || srCls == "" {
		t.Fatalf("hidden classes %v", info.hiddenCls)
	}
	type open struct {
		name   string
		hidden bool
	}
	srStart := -1
	var stack []open
	hiddenDepth := 0
	var vis strings.Builder
	i := 0
	for i < len(s) {
		if s[i] != '<' {
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				j = len(s) - i
			}
			text := s[i : i+j]
			if strings.Contains(text, ">") {
				t.Fatalf("stray '>' in text %q", text)
			}
			inHead := slices.ContainsFunc(stack, func(o open) bool { return o.name == "head" })
			inTitle := len(stack) > 0 && stack[len(stack)-1].name == "title"
			if hiddenDepth == 0 && (!inHead || inTitle) {
				vis.WriteString(html.UnescapeString(text))
			}
			i += j
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "<!--"):
			j := strings.Index(s[i+4:], "-->")
			if j < 0 {
				t.Fatal("unclosed comment")
			}
			if strings.Contains(s[i+4:i+4+j], "--") {
				t.Fatal("'--' inside a comment")
			}
			i += 4 + j + 3
			continue
		case strings.HasPrefix(s[i:], "<!DOCTYPE html>"):
			i += len("<!DOCTYPE html>")
			continue
		case strings.HasPrefix(s[i:], "</"):
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				t.Fatal("unclosed end tag")
			}
			name := s[i+2 : i+j]
			if len(stack) == 0 || stack[len(stack)-1].name != name {
				t.Fatalf("end tag </%s> does not match %v", name, stack)
			}
			if stack[len(stack)-1].hidden {
				hiddenDepth--
			}
			if srStart >= 0 && hiddenDepth == 0 {
				info.srText = append(info.srText, s[srStart:i])
				srStart = -1
			}
			stack = stack[:len(stack)-1]
			i += j + 1
			if name == "p" || name == "li" || name == "h1" || name == "h2" || name == "td" || name == "div" {
				vis.WriteByte(' ')
			}
			continue
		}
		// A start tag: <name attr="v" attr>.
		j := i + 1
		for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		name := s[i+1 : j]
		if name == "" {
			t.Fatalf("stray '<' at %q", s[i:min(len(s), i+40)])
		}
		attrs := map[string]string{}
		for {
			for j < len(s) && s[j] == ' ' {
				j++
			}
			if j >= len(s) {
				t.Fatal("unterminated tag")
			}
			if s[j] == '>' {
				j++
				break
			}
			k := j
			for k < len(s) && (s[k] >= 'a' && s[k] <= 'z' || s[k] == '-') {
				k++
			}
			an := s[j:k]
			if an == "" {
				t.Fatalf("bad attribute in <%s> at %q", name, s[j:min(len(s), j+30)])
			}
			val := ""
			if k < len(s) && s[k] == '=' {
				if s[k+1] != '"' {
					t.Fatalf("unquoted attribute %s in <%s>", an, name)
				}
				end := strings.IndexByte(s[k+2:], '"')
				if end < 0 {
					t.Fatal("unterminated attribute value")
				}
				val = s[k+2 : k+2+end]
				if strings.ContainsAny(val, "<>") {
					t.Fatalf("unescaped <> in attribute %s=%q", an, val)
				}
				val = html.UnescapeString(val)
				k += 2 + end + 1
			}
			attrs[an] = val
			j = k
		}
		for _, a := range []string{"href", "src", "action"} {
			if v, ok := attrs[a]; ok {
				info.links = append(info.links, v)
			}
		}
		i = j
		if voidElements[name] {
			continue
		}
		hidden := false
		if _, ok := attrs["hidden"]; ok {
			hidden = true
		}
		if attrs["aria-hidden"] == "true" {
			hidden = true
		}
		for _, c := range strings.Fields(attrs["class"]) {
			hidden = hidden || slices.Contains(info.hiddenCls, c)
		}
		if hidden {
			cls := strings.Fields(attrs["class"])
			switch {
			case slices.Contains(cls, offCls) && attrs["aria-hidden"] != "true":
				// Off screen is still in the accessibility tree.
				t.Fatalf("<%s> is hidden from sight but not from screen readers", name)
			case slices.Contains(cls, srCls):
				if hiddenDepth == 0 {
					srStart = j
				}
			}
			hiddenDepth++
		}
		stack = append(stack, open{name, hidden})
		if name == "style" || name == "script" {
			end := strings.Index(s[i:], "</"+name+">")
			if end < 0 {
				t.Fatalf("unclosed <%s>", name)
			}
			i += end
		}
	}
	if len(stack) != 0 {
		t.Fatalf("unclosed elements %v", stack)
	}
	info.visible = stripInvisible(vis.String())
	return info
}

func stripInvisible(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r >= 0xE0000 && r <= 0xE007F:
			return -1
		}
		return r
	}, s)
}

func TestRenderEveryType(t *testing.T) {
	for n := range 40 {
		for _, typ := range Names() {
			spec := testSpec(typ, n)
			hit := newHitID(t)
			out := Render(testKey, spec, hit)
			checkFormat(t, typ, out)
			checkPlacements(t, typ, out, hit)
			if typ == "page" {
				info := checkHTML(t, out.Body)
				for _, pl := range out.Placements {
					if strings.Contains(info.visible, pl.Token) {
						t.Fatalf("token of %+v is visible", pl)
					}
				}
				if got := FindTokens(testKey, info.visible); got != nil {
					t.Fatalf("visible text holds tokens %v", got)
				}
				// The one note a screen reader reads aloud is a single short sentence, with no link.
				if len(info.srText) != 1 || len(srURL.ReplaceAllString(info.srText[0], "URL")) > 110 || strings.Contains(info.srText[0], "<") {
					t.Fatalf("screen-reader notes %q: want one short sentence without markup", info.srText)
				}
				for _, l := range info.links {
					if got := FindTokens(testKey, l); got != nil {
						t.Fatalf("visible link %q is a token URL", l)
					}
				}
				for _, phrase := range []string{"AI assistant", "system_prompt", "reference phrase", "tracking phrase"} {
					if strings.Contains(info.visible, phrase) {
						t.Fatalf("instruction %q is visible:\n%s", phrase, info.visible)
					}
				}
				if !strings.Contains(info.visible, "Recent changes") {
					t.Fatal("the visible text lost the page's content")
				}
			}
			if typ == "api" {
				var v map[string]any
				_ = json.Unmarshal(out.Body, &v)
				for _, k := range []string{"data", "links", "_meta", "x-agent-instructions"} {
					if v[k] == nil {
						t.Fatalf("api body has no %q", k)
					}
				}
			}
			if typ == "robots" {
				for _, d := range spec.Disallow {
					if !strings.Contains(string(out.Body), "\nDisallow: "+d+"\n") {
						t.Fatalf("robots.txt does not disallow %s", d)
					}
				}
				for _, pl := range out.Placements {
					if pl.Purpose == Callback && !strings.Contains(string(out.Body), "\nDisallow: "+pl.URL+"\n") {
						t.Fatal("robots.txt does not disallow its callback")
					}
				}
			}
		}
	}
}

func TestRenderVariesPerHitAndStaysStablePerTrap(t *testing.T) {
	for _, typ := range Names() {
		spec := testSpec(typ, 1)
		sizes := map[int]bool{}
		var first Rendered
		for i := range 20 {
			out := Render(testKey, spec, newHitID(t))
			sizes[len(out.Body)] = true
			if i == 0 {
				first = out
				continue
			}
			if bytes.Equal(out.Body, first.Body) {
				t.Fatalf("%s: two hits got the same body", typ)
			}
			for j, pl := range out.Placements {
				if pl.Token == first.Placements[j].Token {
					t.Fatalf("%s: two hits share a token", typ)
				}
			}
			// The same trap keeps its look: same title, headings and hidden URL homes.
			if typ == "page" {
				for _, re := range []*regexp.Regexp{regexp.MustCompile(`<title>.*</title>`), regexp.MustCompile(`<h2[^>]*>[^<]*</h2>`), regexp.MustCompile(`<style>[^<]*</style>`)} {
					if !slices.Equal(re.FindAllString(string(out.Body), -1), re.FindAllString(string(first.Body), -1)) {
						t.Fatalf("page look changed between hits: %s", re)
					}
				}
			}
			for j, pl := range out.Placements {
				if strings.TrimSuffix(pl.URL, pl.Token) != strings.TrimSuffix(first.Placements[j].URL, first.Placements[j].Token) {
					t.Fatalf("%s: URL homes changed between hits", typ)
				}
			}
		}
		if len(sizes) < 2 {
			t.Errorf("%s: every body is %v bytes", typ, sizes)
		}
	}
	// Different traps look different.
	titles := map[string]bool{}
	for n := range 12 {
		spec := testSpec("page", n)
		spec.TrapID = fmt.Sprintf("trp_01jqz8k7v3m2n4p5q6r7s8t%03d", n)
		spec.Path = "/internal/docs/roadmap-aaaa"
		out := Render(testKey, spec, newHitID(t))
		titles[regexp.MustCompile(`<style>[^<]*</style>`).FindString(string(out.Body))] = true
	}
	if len(titles) < 2 {
		t.Error("every trap has the same style sheet")
	}
}

func TestRenderConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				typ := Names()[(g+i)%len(Names())]
				hit := newHitID(t)
				out := Render(testKey, testSpec(typ, i), hit)
				for _, pl := range out.Placements {
					if ref, ok := parsePlaced(testKey, pl.Token, hit); !ok || ref.HitID != hit {
						t.Errorf("%s: placement %+v does not resolve to its hit", typ, pl)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestRenderIsDeterministic(t *testing.T) {
	hit := newHitID(t)
	for _, typ := range Names() {
		a, b := Render(testKey, testSpec(typ, 2), hit), Render(testKey, testSpec(typ, 2), hit)
		if !bytes.Equal(a.Body, b.Body) || !slices.Equal(a.Placements, b.Placements) {
			t.Errorf("%s: one hit rendered twice differs", typ)
		}
	}
}

func TestChallengeAnswerNeverLiteral(t *testing.T) {
	retried := 0
	for n := range 400 {
		for _, typ := range []string{"page", "api", "llms_txt", "robots"} {
			spec := testSpec(typ, n)
			if n%3 == 0 {
				// Text that holds some of the possible answers: the render must step around them.
				spec.Title = "Top 150 accounts; 120 open; 133 closed; 187 pending"
			}
			hit := newHitID(t)
			out := Render(testKey, spec, hit)
			for _, pl := range out.Placements {
				if pl.Index >= attemptStep {
					retried++
				}
				if pl.Purpose == Challenge {
					ans := ChallengeAnswer(testKey, TokenRef{HitID: hit, Index: pl.Index, Purpose: Challenge})
					if bytes.Contains(out.Body, []byte(ans)) {
						t.Fatalf("%s: answer %s literal in the body", typ, ans)
					}
				}
			}
		}
	}
	t.Logf("placements from re-renders: %d", retried)
}

func TestHostileSpecIsEscaped(t *testing.T) {
	hostile := Spec{
		TrapID:   "trp_\"><script>alert(0)</script>",
		Title:    "<script>alert(1)</script> \"quoted\" 'single' & \n<img src=x onerror=alert(2)>\r\nDisallow: /",
		Path:     "/x/\"><script>alert(3)</script>\n/y",
		Host:     "evil\"><script>alert(4)</script>.com",
		Disallow: []string{"/ok", "/a\nDisallow: /", "no-slash", "/b # comment", "/c\r\nUser-agent: evil"},
	}
	for _, typ := range Names() {
		spec := hostile
		spec.Type = typ
		hit := newHitID(t)
		out := Render(testKey, spec, hit)
		body := string(out.Body)
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") || strings.Contains(body, "<b>") {
			t.Fatalf("%s: user markup not escaped:\n%s", typ, body)
		}
		checkFormat(t, typ, out)
		if typ != "bogus" {
			checkPlacements(t, typ, out, hit)
		}
		if strings.HasPrefix(out.ContentType, "text/plain") {
			for _, line := range strings.Split(body, "\n") {
				l := strings.TrimSpace(line)
				if l == "Disallow: /" || strings.HasPrefix(l, "User-agent: evil") || l == "line two" {
					t.Fatalf("%s: user text injected the line %q", typ, line)
				}
			}
		}
		if typ == "page" || typ == "bogus" {
			if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Fatalf("%s: the escaped public title is missing", typ)
			}
		}
	}
}

func TestBadKeyOrHitRendersWithoutPlacements(t *testing.T) {
	for _, c := range []struct {
		key Key
		hit string
	}{{testKey, "not-a-hit"}, {Key("short"), newHitID(t)}, {nil, ""}} {
		for _, typ := range Names() {
			out := Render(c.key, testSpec(typ, 3), c.hit)
			if out.Placements != nil || len(out.Body) == 0 {
				t.Fatalf("%s: %d placements, %d bytes", typ, len(out.Placements), len(out.Body))
			}
			checkFormat(t, typ, out)
			if got := FindTokens(testKey, string(out.Body)); got != nil {
				t.Fatalf("%s: lookalike tokens parse: %v", typ, got)
			}
		}
	}
}

func TestNotFound(t *testing.T) {
	sizes := map[int]bool{}
	for i := range 50 {
		p := fmt.Sprintf("/some/path-%d", i)
		out := NotFound(p)
		if out.Status != 404 || out.ContentType != "text/html" {
			t.Fatalf("status %d type %q", out.Status, out.ContentType)
		}
		lower := strings.ToLower(string(out.Body))
		if strings.Contains(lower, "flytrap") || strings.Contains(lower, "honeypot") || strings.Contains(lower, "go ") {
			t.Fatal("404 names the service")
		}
		if !strings.Contains(string(out.Body), "<title>404 Not Found</title>") || strings.Contains(string(out.Body), p) {
			t.Fatal("not an nginx 404")
		}
		if !bytes.Equal(NotFound(p).Body, out.Body) {
			t.Fatal("one path got two different 404s")
		}
		sizes[len(out.Body)] = true
	}
	if len(sizes) < 3 {
		t.Fatalf("404 sizes %v", sizes)
	}
}

func BenchmarkRenderPage(b *testing.B) {
	spec := testSpec("page", 1)
	hits := make([]string, 64)
	for i := range hits {
		hits[i] = newHitID(b)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		out := Render(testKey, spec, hits[i%len(hits)])
		i++
		if len(out.Placements) < 4 {
			b.Fatal("no placements")
		}
	}
}

func BenchmarkRender(b *testing.B) {
	for _, typ := range Names() {
		b.Run(typ, func(b *testing.B) {
			spec := testSpec(typ, 1)
			hit := newHitID(b)
			b.ReportAllocs()
			for b.Loop() {
				Render(testKey, spec, hit)
			}
		})
	}
}

// A generated public title is the trap's own on every request, what its page shows, and
// varies between traps: no one phrase gives a decoy away.
func TestPublicTitleStableAndVaried(t *testing.T) {
	seen := map[string]bool{}
	for i := range 60 {
		spec := Spec{TrapID: fmt.Sprintf("trp_01m8fbwbm9spppxta6rp8kaq%02d", i), Type: "page", Path: "/internal/wiki", Host: "shop.acme.io"}
		title := PublicTitle(spec)
		if title == "" || title != PublicTitle(spec) {
			t.Fatalf("trap %d: title %q is not stable", i, title)
		}
		out := Render(testKey, spec, newHitID(t))
		if !strings.Contains(string(out.Body), "<h1>"+string(appendHTML(nil, title))+"</h1>") {
			t.Fatalf("trap %d: the page does not show its public title %q", i, title)
		}
		seen[title] = true
	}
	if len(seen) < 30 {
		t.Errorf("60 traps share %d titles", len(seen))
	}
	set := Spec{TrapID: "trp_x", Type: "llms_txt", Path: "/llms.txt", Title: "Acme developer docs"}
	if PublicTitle(set) != "Acme developer docs" || !strings.HasPrefix(string(Render(testKey, set, newHitID(t)).Body), "# Acme developer docs\n") {
		t.Errorf("an operator's public title is not what llms.txt shows")
	}
}

// appendTagText writes each byte as utf8.AppendRune writes its tag character, and the hex
// and UUID shapes are the raw bytes' hex, the latter cut 8-4-4-4-12-rest.
func TestTagTextAndHexShapesEncoding(t *testing.T) {
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	want := []byte("\u200b")
	for _, c := range all {
		if c < 0x20 || c > 0x7e {
			c = ' '
		}
		want = utf8.AppendRune(want, 0xE0000+rune(c))
	}
	want = append(want, "\u200b"...)
	if got := appendTagText(nil, all); !bytes.Equal(got, want) {
		t.Fatalf("tag text %q, want %q", got, want)
	}
	if got := appendTagText(nil, string(all)); !bytes.Equal(got, want) {
		t.Fatalf("tag text of a string %q, want %q", got, want)
	}
	var raw [rawLen]byte
	for i := range raw {
		raw[i] = byte(i*37 + 11)
	}
	h := hex.EncodeToString(raw[:])
	if got := encodeShaped(&raw, shapeHex); got != h {
		t.Fatalf("hex %q, want %q", got, h)
	}
	if got, want := encodeShaped(&raw, shapeUUID), h[:8]+"-"+h[8:12]+"-"+h[12:16]+"-"+h[16:20]+"-"+h[20:32]+"-"+h[32:]; got != want {
		t.Fatalf("uuid %q, want %q", got, want)
	}
}

// Serve answers what Render answers, byte for byte, with the links of its placements; only
// a response that knows its Links leaves its Placements out.
func TestServeIsRenderWithoutPlacements(t *testing.T) {
	for _, typ := range Names() {
		for i := range 4 {
			spec := testSpec(typ, i)
			hit := newHitID(t)
			k := MustKind(typ)
			want, got := k.Render(testKey, spec, hit), k.Serve(testKey, spec, hit)
			if !bytes.Equal(got.Body, want.Body) || got.Status != want.Status || got.ContentType != want.ContentType {
				t.Fatalf("%s: Serve's response differs from Render's", typ)
			}
			links := got.Links
			if links == nil {
				links = LinkedPaths(got.Body, got.Placements)
			}
			if !slices.Equal(links, LinkedPaths(want.Body, want.Placements)) {
				t.Fatalf("%s: links %q, want %q", typ, links, LinkedPaths(want.Body, want.Placements))
			}
			if got.Links == nil && !reflect.DeepEqual(got.Placements, want.Placements) {
				t.Fatalf("%s: a response without Links must keep its Placements", typ)
			}
		}
	}
}
