package graph

import (
	"context"
	"errors"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/decoy"
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
	html, url, token := decoy.Snippet(r.TokenKey(), t.ID, t.Path, t.Name)
	return &model.LureSnippet{HTML: html, URL: url, Token: token}, nil
}
