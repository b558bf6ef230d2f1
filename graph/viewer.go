package graph

import (
	"context"
	"errors"
	"strings"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/graph/model"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/viewer"
)

// Previewer renders a trap's decoy as the trap listener would, without recording a hit.
type Previewer func(ctx context.Context, t *ent.Trap) (decoy.Rendered, error)

// Viewer is the resolver for the viewer field.
func (r *queryResolver) Viewer(ctx context.Context) (*model.Viewer, error) {
	v, ok := viewer.FromContext(ctx)
	if !ok {
		return nil, ErrUnauthenticated
	}
	out := &model.Viewer{OrgID: v.OrgID, Scope: v.Scope}
	if v.KeyID != "" {
		out.KeyID = &v.KeyID
	}
	if v.Subject != "" {
		out.Subject = &v.Subject
	}
	return out, nil
}

// TrapPreview is the resolver for the trapPreview field.
func (r *queryResolver) TrapPreview(ctx context.Context, id string) (*model.TrapPreview, error) {
	if err := app.CheckID(id, ids.Trap); err != nil {
		return nil, err
	}
	t, err := r.ent(ctx).Trap.Get(ctx, id) // the privacy policy hides other organizations' traps
	if err != nil {
		return nil, err
	}
	if r.Previewer == nil {
		return nil, errors.New("trap preview is not available")
	}
	out, err := r.Previewer(ctx, t)
	if err != nil {
		return nil, err
	}
	status := out.Status
	if status == 0 {
		status = 200
	}
	title, err := publicTitle(ctx, t)
	if err != nil {
		return nil, err
	}
	return &model.TrapPreview{
		Status:               status,
		ContentType:          out.ContentType,
		Body:                 strings.ToValidUTF8(string(out.Body), "\uFFFD"),
		Path:                 t.Path,
		PublicTitle:          title,
		PublicTitleGenerated: t.PublicTitle == "",
	}, nil
}
