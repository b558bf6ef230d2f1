package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	entgo "entgo.io/ent"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/event"
)

// Outbox, a hook on event creation, turns a new event into a delivery for every active endpoint of its
// organization whose filter takes it, in the event's own transaction: a committed event
// always has its deliveries, a rolled-back one has none.
func Outbox(next entgo.Mutator) entgo.Mutator {
	return hook.EventFunc(func(ctx context.Context, m *ent.EventMutation) (ent.Value, error) {
		v, err := next.Mutate(ctx, m)
		if err != nil {
			return nil, err
		}
		ev := v.(*ent.Event)
		ctx = privacy.DecisionContext(ctx, privacy.Allow)
		c := m.Client()
		eps, err := c.WebhookEndpoint.Query().
			Where(webhookendpoint.OrgID(ev.OrgID), webhookendpoint.Active(true)).All(ctx)
		if err != nil {
			return nil, fmt.Errorf("find webhook endpoints: %w", err)
		}
		if len(eps) == 0 {
			return v, nil
		}
		session, _ := ev.Data["session_id"].(string)
		if !strings.HasPrefix(ev.Type, "threat.") {
			session = ""
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		payload := event.Envelope(ev)
		var creates []*ent.WebhookDeliveryCreate
		for _, ep := range eps {
			if !Matches(ep.EventTypes, ev.Type) {
				continue
			}
			status := webhookdelivery.StatusPENDING
			if ep.ThrottleMinutes > 0 && session != "" {
				recent, err := c.WebhookDelivery.Query().Where(
					webhookdelivery.EndpointID(ep.ID),
					webhookdelivery.SessionID(session),
					webhookdelivery.StatusNEQ(webhookdelivery.StatusSUPPRESSED),
					webhookdelivery.CreatedAtGT(now.Add(-time.Duration(ep.ThrottleMinutes)*time.Minute)),
				).Exist(ctx)
				if err != nil {
					return nil, fmt.Errorf("check webhook throttle: %w", err)
				}
				if recent {
					status = webhookdelivery.StatusSUPPRESSED
				}
			}
			creates = append(creates, c.WebhookDelivery.Create().
				SetOrgID(ev.OrgID).
				SetEndpointID(ep.ID).
				SetMessageID(ev.ID).
				SetEventType(ev.Type).
				SetSessionID(session).
				SetPayload(payload).
				SetStatus(status).
				SetCreatedAt(now).
				SetNextAttemptAt(now))
		}
		if len(creates) > 0 {
			if err := c.WebhookDelivery.CreateBulk(creates...).Exec(ctx); err != nil {
				return nil, fmt.Errorf("write webhook deliveries: %w", err)
			}
		}
		return v, nil
	})
}

// Matches reports whether an endpoint's type filter takes events of type typ.
func Matches(filter []string, typ string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if f == "*" || f == typ {
			return true
		}
		if p, ok := strings.CutSuffix(f, ".*"); ok && strings.HasPrefix(typ, p+".") {
			return true
		}
	}
	return false
}
