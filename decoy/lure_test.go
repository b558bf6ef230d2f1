package decoy

import (
	"strings"
	"testing"
	"time"

	"github.com/flytrap/flytrap/ids"
)

func TestLureTokens(t *testing.T) {
	now := time.UnixMilli(time.Now().UnixMilli())
	spec := LureSpec{SiteID: "site_a", Count: MaxLures, Targets: []LureTarget{{Path: "/internal/docs/runbook", Title: "Runbook"}, {Path: "/api/private/users"}}}
	html, places := Lure(testKey, spec, now)
	if len(places) != MaxLures {
		t.Fatalf("%d placements, want %d", len(places), MaxLures)
	}
	refs := FindTokens(testKey, string(html))
	if len(refs) != MaxLures {
		t.Fatalf("found %d tokens in the lure, want %d:\n%s", len(refs), MaxLures, html)
	}
	for i, ref := range refs {
		if ref.Origin != OriginLure || ref.Index != places[i].Index || ref.Purpose != places[i].Purpose {
			t.Errorf("token %d = %+v, want a lure token of placement %+v", i, ref, places[i])
		}
		at, ok := LureServed(testKey, ref, "site_a")
		if !ok || !at.Equal(now) {
			t.Errorf("LureServed(site_a) = %v, %v; want %v", at, ok, now)
		}
		if _, ok := LureServed(testKey, ref, "site_b"); ok {
			t.Errorf("a lure of site_a was accepted for site_b")
		}
		if _, ok := LureServed(Key("another key, sixteen bytes+"), ref, "site_a"); ok {
			t.Errorf("a lure was accepted under another key")
		}
	}
	// The challenge's answer is never literal, and its words give it.
	ch := refs[2]
	ans := ChallengeAnswer(testKey, ch)
	if ans == "" || strings.Contains(string(html), ans) {
		t.Errorf("challenge answer %q missing or shown in the page:\n%s", ans, html)
	}
	for _, want := range []string{"<div hidden aria-hidden=\"true\">", "<!-- ", "/internal/docs/runbook?ref=", "/api/private/users?ref="} {
		if !strings.Contains(string(html), want) {
			t.Errorf("lure lacks %q:\n%s", want, html)
		}
	}
	// Two pages never share a token.
	html2, _ := Lure(testKey, spec, now)
	for _, p := range places {
		if strings.Contains(string(html2), p.Token) {
			t.Errorf("token %s served twice", p.Token)
		}
	}
}

func TestLureEscapesTargets(t *testing.T) {
	html, _ := Lure(testKey, LureSpec{SiteID: "s", Count: 2, Targets: []LureTarget{{Path: `/a"><script>x</script>--`, Title: `<b>"x"</b>`}}}, time.Now())
	for _, bad := range []string{"<script>", `"><script`, "<b>", "x</script>--"} {
		if strings.Contains(string(html), bad) {
			t.Errorf("lure carries %q unescaped:\n%s", bad, html)
		}
	}
	if n := strings.Count(string(html), "-->"); n != 1 {
		t.Errorf("comment closes %d times:\n%s", n, html)
	}
}

func TestSnippetToken(t *testing.T) {
	trapID := ids.New(ids.Trap)
	tok := SnippetToken(testKey, trapID)
	if tok == "" || tok != SnippetToken(testKey, trapID) {
		t.Fatalf("snippet token %q is not stable", tok)
	}
	ref, ok := ParseToken(testKey, tok)
	if !ok || ref.Origin != OriginSnippet || ref.TrapID != trapID || ref.HitID != "" || ref.Purpose != Callback {
		t.Fatalf("ParseToken(snippet) = %+v, %v", ref, ok)
	}
	if SnippetToken(testKey, "hit_01arz3ndektsv4rrffq69g5fav") != "" {
		t.Errorf("a hit id made a snippet token")
	}
	// A decoy's own token still parses as a stored hit's.
	hit := newHitID(t)
	ref, ok = ParseToken(testKey, NewToken(testKey, hit, 3, Sink))
	if !ok || ref.Origin != OriginHit || ref.HitID != hit || ref.TrapID != "" {
		t.Errorf("a decoy token parsed as %+v, %v", ref, ok)
	}
}
