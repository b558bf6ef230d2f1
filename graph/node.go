package graph

import (
	"context"

	"github.com/flytrap/flytrap/apperr"
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

var nameOfPrefix = map[string]string{
	ids.Org: "organization", ids.Site: "site", ids.Trap: "trap", ids.Session: "session",
	ids.Hit: "hit", ids.Event: "event", ids.APIKey: "API key", ids.Signal: "signal", ids.Prompt: "prompt",
	ids.Webhook: "webhook endpoint", ids.Delivery: "webhook delivery",
}

// CheckID refuses an id that is malformed or names another kind of object than prefix.
func CheckID(id, prefix string) error {
	if ids.Prefix(id) != prefix {
		return apperr.Invalid("id", "%q is not a %s id (%s_…)", clip.Mark(id, 64), nameOfPrefix[prefix], prefix)
	}
	return nil
}
