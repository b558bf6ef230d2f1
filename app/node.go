package app

import (
	"context"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/apikey"
	"github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/organization"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/ent/signal"
	"github.com/flytrap/flytrap/ent/site"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
)

// Node is the caller's object of any kind by its id.
func (a *App) Node(ctx context.Context, id string) (ent.Noder, error) {
	return a.ent(ctx).Noder(ctx, id, ent.WithNodeType(nodeType))
}

// Nodes is the caller's objects by their ids.
func (a *App) Nodes(ctx context.Context, ids []string) ([]ent.Noder, error) {
	return a.ent(ctx).Noders(ctx, ids, ent.WithNodeType(nodeType))
}

var tableOfPrefix = map[string]string{
	ids.Org:      organization.Table,
	ids.Site:     site.Table,
	ids.Trap:     trap.Table,
	ids.Session:  session.Table,
	ids.Hit:      hit.Table,
	ids.Event:    event.Table,
	ids.APIKey:   apikey.Table,
	ids.Signal:   signal.Table,
	ids.Prompt:   prompt.Table,
	ids.Webhook:  webhookendpoint.Table,
	ids.Delivery: webhookdelivery.Table,
}

// nodeType resolves a node id to its table by the id's prefix.
func nodeType(_ context.Context, id string) (string, error) {
	if t, ok := tableOfPrefix[ids.Prefix(id)]; ok {
		return t, nil
	}
	return "", apperr.Invalid("id", "%q is not a Flytrap id", clip.Mark(id, 64))
}
