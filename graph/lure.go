package graph

import (
	"context"
	"errors"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
)

// LureSnippet is the resolver for the lureSnippet field.
func (r *queryResolver) LureSnippet(ctx context.Context, trapID string) (*model.LureSnippet, error) {
	if err := app.CheckID(trapID, ids.Trap); err != nil {
		return nil, err
	}
	t, err := r.ent(ctx).Trap.Get(ctx, trapID) // the privacy policy hides other organizations' traps
	if err != nil {
		return nil, err
	}
	if r.TokenKey == nil {
		return nil, errors.New("lure snippets are not available")
	}
	// The link's text is what visitors read: the trap's public title, never its name.
	title, err := publicTitle(ctx, t)
	if err != nil {
		return nil, err
	}
	html, url, token := decoy.Snippet(r.TokenKey(), t.ID, t.Path, title)
	return &model.LureSnippet{HTML: html, URL: url, Token: token}, nil
}

// publicTitle is the title t's visitors read, on its site's host: its public title or the
// generated one (decoy.PublicTitle).
func publicTitle(ctx context.Context, t *ent.Trap) (string, error) {
	spec := decoy.Spec{TrapID: t.ID, Type: string(t.Type), Path: t.Path, Title: t.PublicTitle}
	if t.SiteID != "" {
		site, err := t.QuerySite().Only(ctx)
		if err != nil {
			return "", err
		}
		if site.Host != nil {
			spec.Host = *site.Host
		}
	}
	return decoy.PublicTitle(spec), nil
}
