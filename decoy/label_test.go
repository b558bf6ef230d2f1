package decoy

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// PlacementWhere must never name the wrong place: for decoys of every type, trap and hit,
// it answers each placement's true Where or "" (and for the fixed layouts, always the truth).
func TestPlacementWhereNeverWrong(t *testing.T) {
	key := Key("0123456789abcdef0123456789abcdef")
	hits := []string{"hit_01arz3ndektsv4rrffq69g5fav", "hit_01hzzzzzzzzzzzzzzzzzzzzzzz", "hit_01j9q7k2m3n4p5r6s7t8v9w0xy"}
	for _, typ := range []string{"page", "api", "llms_txt", "robots", "credential", "mcp"} {
		for i := range 12 {
			spec := Spec{TrapID: fmt.Sprintf("trp_%d", i), Title: fmt.Sprintf("trap %d", i), Type: typ, Path: fmt.Sprintf("/p/%d", i), Host: "example.test"}
			for _, h := range hits {
				for _, pl := range Render(key, spec, h).Placements {
					got := PlacementWhere(typ, pl.Purpose, pl.Index)
					if got != "" && got != pl.Where {
						t.Fatalf("%s %s #%d %s: PlacementWhere %q, truly %q", typ, spec.TrapID, pl.Index, pl.Purpose, got, pl.Where)
					}
					if got == "" && (typ == "page" || typ == "api" || typ == "llms_txt") {
						t.Errorf("%s #%d %s: where unknown, truly %q", typ, pl.Index, pl.Purpose, pl.Where)
					}
				}
			}
		}
	}
}

func TestPlacementLabel(t *testing.T) {
	for _, c := range []struct{ placement, where, want string }{
		{"callback#0", WhereHTMLComment, "hidden link in an HTML comment"},
		{"challenge#2", WhereCSSHidden, "hidden instruction to compute a value in an off-screen note"},
		{"canary#3", "", "hidden instruction to repeat a phrase"},
		{"sink", "", "hidden invitation to send its instructions"},
		{"mcp_tool", "", "hidden content in an MCP tool definition"},
		{"", "", ""},
		{"<script>#1", "nowhere", ""},
	} {
		if got := PlacementLabel(c.placement, c.where); got != c.want {
			t.Errorf("PlacementLabel(%q, %q) = %q, want %q", c.placement, c.where, got, c.want)
		}
	}
	for w := range whereLabels {
		if WhereLabel(w) == "" {
			t.Errorf("no label for %s", w)
		}
	}
	if p, i, ok := ParsePlacement("credential#17"); !ok || p != Credential || i != 17 {
		t.Errorf("ParsePlacement: %v %d %v", p, i, ok)
	}
	for _, bad := range []string{"callback", "callback#x", "callback#300", "nope#1"} {
		if _, _, ok := ParsePlacement(bad); ok {
			t.Errorf("ParsePlacement(%q) ok", bad)
		}
	}
}

// A lure's and a snippet's placements are named as lures, with where they stood when the
// lure layout says it for sure: the dashboard showed "–" for lure_callback#1.
func TestLurePlacementLabels(t *testing.T) {
	_, places := Lure(testKey, LureSpec{SiteID: "s", Count: MaxLures, Targets: []LureTarget{{Path: "/a"}}}, time.Now())
	if len(places) == 0 {
		t.Fatal("no lure placements")
	}
	for _, pl := range places {
		rec := fmt.Sprintf("%s#%d", LurePlacement(pl.Purpose), pl.Index)
		got := PlacementLabel(rec, "")
		if !strings.HasPrefix(got, "lure in a page of your site: "+purposeLabels[pl.Purpose]) {
			t.Errorf("%s: label %q", rec, got)
		}
		if w := LureWhere(pl.Purpose, pl.Index); w != "" && (w != pl.Where || !strings.HasSuffix(got, " in "+WhereLabel(w))) {
			t.Errorf("%s: where %q, label %q, placed in %q", rec, w, got, pl.Where)
		}
		if !IsLurePlacement(rec) {
			t.Errorf("%s is not a lure placement", rec)
		}
	}
	if got := PlacementLabel(SnippetPlacement+"#0", ""); !strings.HasPrefix(got, "lure snippet") {
		t.Errorf("snippet label %q", got)
	}
	if IsLurePlacement("callback#0") || PlacementLabel("callback#0", WhereHTMLComment) != "hidden link in an HTML comment" {
		t.Errorf("a decoy placement: %q", PlacementLabel("callback#0", WhereHTMLComment))
	}
}
