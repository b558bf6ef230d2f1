package graph

import (
	"context"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph/model"
)

// Subscription returns SubscriptionResolver implementation.
func (r *Resolver) Subscription() SubscriptionResolver { return &subscriptionResolver{r} }

type subscriptionResolver struct{ *Resolver }

// Events follows the caller's event log.
func (r *subscriptionResolver) Events(ctx context.Context, types []string, after *entgql.Cursor[string]) (<-chan *model.EventMessage, error) {
	f, err := r.follow(ctx, types, after)
	if err != nil {
		return stopped[*model.EventMessage](ctx, err)
	}
	return subscribe(ctx, r.Resolver, f, func(ev *ent.Event) (*model.EventMessage, error) { return eventMessage(ev), nil })
}

// ThreatDetected yields each session as it is first detected as a threat.
func (r *subscriptionResolver) ThreatDetected(ctx context.Context) (<-chan *ent.Session, error) {
	f, err := r.follow(ctx, []string{event.ThreatDetected}, nil)
	if err != nil {
		return stopped[*ent.Session](ctx, err)
	}
	return subscribe(ctx, r.Resolver, f, func(ev *ent.Event) (*ent.Session, error) {
		id, _ := ev.Data["session_id"].(string)
		return r.ent(ctx).Session.Get(ctx, id)
	})
}

func (r *Resolver) follow(ctx context.Context, types []string, after *entgql.Cursor[string]) (Follow, error) {
	if err := CheckEventTypes("types", types); err != nil {
		return Follow{}, err
	}
	// Revocations made outside a server (the command line on SQLite) are caught here.
	heartbeat := r.CredentialCheck
	if heartbeat <= 0 {
		heartbeat = 15 * time.Second
	}
	f := Follow{Kind: FollowSubscription, Types: types, Heartbeat: heartbeat, Beat: func() error { return r.CredentialStillValid(ctx) }}
	var err error
	if after != nil {
		if f.After, err = positionOf(after); err == nil {
			err = r.CheckEventCursor(ctx, "after", f.After, RestartGraph)
		}
	} else {
		f.After, err = r.EventHead(ctx)
	}
	return f, err
}
