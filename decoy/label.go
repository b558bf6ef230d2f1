package decoy

import (
	"maps"
	"strconv"
	"strings"
	"sync"
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
func PlacementLabel(placement, where string) string {
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
