package schema

import (
	"context"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent"

	"github.com/flytrap/flytrap/detect"
	gen "github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/event"
)

func (Event) Hooks() []ent.Hook {
	return []ent.Hook{hook.On(webhookOutbox, ent.OpCreate)}
}

// webhookOutbox turns a new event into a delivery for every active endpoint of its
// organization whose filter takes it, in the event's own transaction: a committed event
// always has its deliveries, a rolled-back one has none.
func webhookOutbox(next ent.Mutator) ent.Mutator {
	return hook.EventFunc(func(ctx context.Context, m *gen.EventMutation) (ent.Value, error) {
		v, err := next.Mutate(ctx, m)
		if err != nil {
			return nil, err
		}
		ev := v.(*gen.Event)
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
		severity, _ := ev.Data["severity"].(string)
		now := nowUTC()
		payload := event.Envelope(ev)
		var creates []*gen.WebhookDeliveryCreate
		for _, ep := range eps {
			if !WebhookMatches(ep.EventTypes, ev.Type) {
				continue
			}
			status := webhookdelivery.StatusPENDING
			if ep.ThrottleMinutes > 0 && session != "" {
				held, err := throttled(ctx, c, ep, session, severity, now)
				if err != nil {
					return nil, err
				}
				if held {
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

// throttled says whether a threat event of severity for session is merged into an alert the
// endpoint already had in its throttle window: only when one sent there was at least as severe.
// An escalation is always delivered. The window holds at most one sent delivery per severity.
func throttled(ctx context.Context, c *gen.Client, ep *gen.WebhookEndpoint, session, severity string, now time.Time) (bool, error) {
	sent, err := c.WebhookDelivery.Query().Where(
		webhookdelivery.EndpointID(ep.ID),
		webhookdelivery.SessionID(session),
		webhookdelivery.StatusNEQ(webhookdelivery.StatusSUPPRESSED),
		webhookdelivery.CreatedAtGT(now.Add(-time.Duration(ep.ThrottleMinutes)*time.Minute)),
	).Select(webhookdelivery.FieldPayload).All(ctx)
	if err != nil {
		return false, fmt.Errorf("check webhook throttle: %w", err)
	}
	rank := detect.SeverityRank(severity)
	for _, d := range sent {
		data, _ := d.Payload["data"].(map[string]any)
		was, _ := data["severity"].(string)
		if detect.SeverityRank(was) >= rank {
			return true, nil
		}
	}
	return false, nil
}
