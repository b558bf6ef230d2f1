package trap

import (
	"context"
	"slices"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ids"
)

// Preview renders t's decoy as the listener would answer a GET of its path on its
// site's host (an mcp trap: its GET view), recording nothing. The hit id it renders
// for is fresh and never stored, so the preview's tokens resolve to no hit: they are inert.
// ctx carries the caller, whose organization's rules apply to the reads, which go through
// t's own client (the API's pool, never the trap listener's).
func (e *Engine) Preview(ctx context.Context, t *ent.Trap) (decoy.Rendered, error) {
	s := SpecOf(t, "")
	if t.SiteID != "" {
		site, err := t.QuerySite().Only(ctx)
		if err != nil {
			return decoy.Rendered{}, err
		}
		if site.Host != nil {
			s.Host = *site.Host
		}
		if decoy.MustKind(string(t.Type)).Disallows() {
			others, err := site.QueryTraps().
				Where(trap.Active(true), trap.PathNEQ(t.Path),
					trap.TypeNotIn(unlistedKinds()...)).
				Select(trap.FieldPath).Strings(ctx)
			if err != nil {
				return decoy.Rendered{}, err
			}
			slices.Sort(others)
			s.Disallow = others
		}
	}
	return decoy.Render(e.key, s, ids.New(ids.Hit)), nil
}

// SpecOf is what t's decoy is rendered from, answering a request for host: never its
// name or description (the operator's words), only its public title.
func SpecOf(t *ent.Trap, host string) decoy.Spec {
	return decoy.Spec{TrapID: t.ID, Type: string(t.Type), Path: t.Path, Title: t.PublicTitle, Host: host}
}

// PublicTitle is the title t's visitors read (its decoy's and its lures'), on a site
// reached at host ("" when it has none).
func PublicTitle(t *ent.Trap, host string) string { return decoy.PublicTitle(SpecOf(t, host)) }

// unlistedKinds are the trap types a robots.txt does not list.
func unlistedKinds() []trap.Type {
	var out []trap.Type
	for _, k := range decoy.Unlisted() {
		out = append(out, trap.Type(k))
	}
	return out
}
