package decoy

import (
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sharedWheres name each Where several kinds share in words, for people reading a session
// ("in an HTML comment"); a kind names its own (About.Wheres). whereLabels is the one table
// of both: the dashboard shows what the API returns from it.
var sharedWheres = map[string]string{
	WhereHTMLComment:  "an HTML comment",
	WhereCSSHidden:    "an off-screen note",
	WhereMetaTag:      "a meta tag",
	WhereAriaHidden:   "an invisible note (hidden from screen readers)",
	WhereDisplayNone:  "a block the style sheet hides",
	WhereScreenReader: "a screen-reader note",
	WhereZeroWidth:    "zero-width text",
	WhereJSONMeta:     "JSON metadata",
	WhereJSONField:    "a JSON field",
	WhereHeader:       "a Link header",
}

var whereLabels = maps.Clone(sharedWheres) // and every registered kind's Wheres

// purposeLabels name what a placement asked of its reader.
var purposeLabels = [...]string{
	Callback:   "hidden link",
	Challenge:  "hidden instruction to compute a value",
	Canary:     "hidden instruction to repeat a phrase",
	Sink:       "hidden invitation to send its instructions",
	Credential: "planted credential",
	Tool:       "decoy tool",

	DatabasePassword: "planted database password",
	RedisPassword:    "planted Redis password",
	SessionSecret:    "planted session secret",
	AWSAccessKey:     "planted AWS access key",
}

// WhereLabel is where's name in words ("an HTML comment"), "" for an unknown one.
func WhereLabel(where string) string { return whereLabels[where] }

// PlacementLabel names a recorded placement in words: "hidden link in an HTML comment",
// "hidden instruction to compute a value in an off-screen note", or the purpose alone
// when where is unknown. placement is as the engine records it on a signal: a purpose,
// optionally with "#index" ("callback#0"), or a Where name ("mcp_tool").
//
// A lure's placement ("lure_callback#0", in a page of the customer's site the lure proxy
// served) and a snippet's ("snippet#0", pasted into the customer's templates) say so first:
// "lure in a page of your site: hidden link in an off-screen note".
func PlacementLabel(placement, where string) string {
	if rest, ok := strings.CutPrefix(placement, lurePlacementPrefix); ok {
		if p, idx, ok := ParsePlacement(rest); ok && where == "" {
			where = LureWhere(p, idx)
		}
		if l := placementLabel(rest, where); l != "" {
			return "lure in a page of your site: " + l
		}
		return "lure in a page of your site"
	}
	if name, _, _ := strings.Cut(placement, "#"); name == snippetPlacement {
		return "lure snippet in your own pages: " + purposeLabels[Callback]
	}
	return placementLabel(placement, where)
}

// The recorded placements of tokens that did not come from a decoy (trap/proxy.go names them).
const (
	lurePlacementPrefix = "lure_"
	snippetPlacement    = "snippet"
)

// LurePlacement is the recorded placement of a lure token's purpose ("lure_callback").
func LurePlacement(p Purpose) string { return lurePlacementPrefix + p.String() }

// SnippetPlacement is the recorded placement of a snippet token.
const SnippetPlacement = snippetPlacement

// IsLurePlacement says a recorded placement is a lure's or a snippet's: hidden content in
// the customer's own pages rather than in a decoy.
func IsLurePlacement(placement string) bool {
	name, _, _ := strings.Cut(placement, "#")
	return strings.HasPrefix(name, lurePlacementPrefix) || name == snippetPlacement
}

// LureWhere is where the lure placement index with purpose p stands in a proxied page, or
// "" when that cannot be said for sure: a reference rendering of the lures tells (as
// PlacementWhere does for decoys), kept only where every rendering agrees.
func LureWhere(p Purpose, index int) string {
	lureLayoutOnce.Do(func() {
		key := Key("flytrap reference layout key")
		targets := []LureTarget{{Path: "/reference/a"}, {Path: "/reference/b"}}
		seen := map[int]Placement{}
		mixed := map[int]bool{}
		for i := range 16 {
			_, places := Lure(key, LureSpec{SiteID: "site_reference", Targets: targets, Count: MaxLures}, time.UnixMilli(1_700_000_000_000+int64(i)*7919))
			for _, pl := range places {
				if old, ok := seen[pl.Index]; ok && (old.Where != pl.Where || old.Purpose != pl.Purpose) {
					mixed[pl.Index] = true
				}
				seen[pl.Index] = pl
			}
		}
		lureLayout = map[int]Placement{}
		for i, pl := range seen {
			if !mixed[i] {
				lureLayout[i] = pl
			}
		}
	})
	if pl, ok := lureLayout[index]; ok && pl.Purpose == p {
		return pl.Where
	}
	return ""
}

var (
	lureLayoutOnce sync.Once
	lureLayout     map[int]Placement
)

func placementLabel(placement, where string) string {
	name, _, _ := strings.Cut(placement, "#")
	if w := whereLabels[name]; w != "" && where == "" {
		where = name
		name = ""
	}
	what := ""
	if p, ok := ParsePurpose(name); ok {
		what = purposeLabels[p]
	}
	in := whereLabels[where]
	switch {
	case what != "" && in != "":
		return what + " in " + in
	case what != "":
		return what
	case in != "":
		return "hidden content in " + in
	}
	return ""
}

// ParsePurpose reads a purpose's name ("callback", …); "sink" and "tool" included.
func ParsePurpose(s string) (Purpose, bool) {
	for p := Callback; p <= lastPurpose; p++ {
		if purposeNames[p] == s {
			return p, true
		}
	}
	return 0, false
}

// ParsePlacement splits a recorded placement "purpose#index" into its parts.
func ParsePlacement(placement string) (p Purpose, index int, ok bool) {
	name, idx, found := strings.Cut(placement, "#")
	if p, ok = ParsePurpose(name); !ok || !found {
		return 0, 0, false
	}
	index, err := strconv.Atoi(idx)
	if err != nil || index < 0 || index > 255 {
		return 0, 0, false
	}
	return p, index, true
}

// PlacementWhere is where the placement index with purpose p stood in a decoy of trap type
// trapType, or "" when that cannot be said for sure. Placements are minted in a fixed
// order per type (see page, api, …), so a reference render of the type tells; a placement
// whose purpose differs there (a layout that varies, such as an MCP tool list) is answered
// only when every placement of that purpose in the type stands in the same place.
func PlacementWhere(trapType string, p Purpose, index int) string {
	ref := referenceLayout(trapType)
	if pl, ok := ref.at[index%attemptStep]; ok && pl.Purpose == p {
		return pl.Where
	}
	return ref.only[p]
}

type layout struct {
	at   map[int]Placement
	only map[Purpose]string // the one Where of a purpose, when it has one
}

var layouts sync.Map // trap type → *layout

func referenceLayout(trapType string) *layout {
	if l, ok := layouts.Load(trapType); ok {
		return l.(*layout)
	}
	key := Key("flytrap reference layout key")
	out := Render(key, Spec{TrapID: "trp_reference", Title: "Reference", Type: trapType, Path: "/reference"}, "hit_01arz3ndektsv4rrffq69g5fav")
	l := &layout{at: map[int]Placement{}, only: map[Purpose]string{}}
	wheres := map[Purpose]map[string]bool{}
	for _, pl := range out.Placements {
		l.at[pl.Index%attemptStep] = pl
		if wheres[pl.Purpose] == nil {
			wheres[pl.Purpose] = map[string]bool{}
		}
		wheres[pl.Purpose][pl.Where] = true
	}
	for p, ws := range wheres {
		if len(ws) == 1 {
			for w := range ws {
				l.only[p] = w
			}
		}
	}
	maps.Copy(l.only, MustKind(trapType).only) // a layout that varies by request says where its purposes stand
	layouts.Store(trapType, l)
	return l
}
