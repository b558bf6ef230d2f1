package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	entgo "entgo.io/ent"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
	"github.com/flytrap/flytrap/ent/privacy"
	entsession "github.com/flytrap/flytrap/ent/session"
	enttrap "github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/wire"
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
		severity, _ := ev.Data["severity"].(string)
		now := time.Now().UTC().Truncate(time.Millisecond)
		payload := event.Envelope(ev)
		var creates []*ent.WebhookDeliveryCreate
		withContext := false
		for _, ep := range eps {
			if !Matches(ep.EventTypes, ev.Type) {
				continue
			}
			if session != "" && !withContext {
				// What a person reading the alert needs, as the session stands in this transaction.
				withContext = true
				ac, err := alertContext(ctx, c, ev.OrgID, session)
				if err != nil {
					return nil, err
				}
				if ac != nil {
					payload["context"] = ac
				}
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
func throttled(ctx context.Context, c *ent.Client, ep *ent.WebhookEndpoint, session, severity string, now time.Time) (bool, error) {
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

// Bounds of the alert context: user agents, trap names and paths are attacker- or
// tenant-controlled, and alerts go to chat tools with message size limits.
const (
	alertMaxUA    = 512
	alertMaxTraps = 10
	alertMaxName  = 100
	alertMaxPath  = 200
)

// alertContext gathers what a threat alert shows besides the event's data: the user agent,
// the signals with their counts, the traps by name. nil when the session is not stored.
func alertContext(ctx context.Context, c *ent.Client, org, id string) (map[string]any, error) {
	s, err := c.Session.Query().Where(entsession.ID(id), entsession.OrgID(org)).Only(ctx)
	if ent.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the session for a webhook alert: %w", err)
	}
	ac := wire.AlertContext{UserAgent: clip.Fit(s.UserAgent, alertMaxUA), Signals: []wire.AlertSignal{}, Traps: []wire.AlertTrap{}}
	for _, name := range s.SignalsFired {
		ac.Signals = append(ac.Signals, wire.AlertSignal{Name: name, Count: max(s.State.Signals[name], 1)})
	}
	ids := s.TrapsTriggered
	if len(ids) > alertMaxTraps {
		ids, ac.TrapsMore = ids[:alertMaxTraps], len(ids)-alertMaxTraps
	}
	rows, err := c.Trap.Query().Where(enttrap.IDIn(ids...), enttrap.OrgID(org)).
		Select(enttrap.FieldID, enttrap.FieldName, enttrap.FieldPath).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the traps for a webhook alert: %w", err)
	}
	byID := make(map[string]*ent.Trap, len(rows))
	for _, t := range rows {
		byID[t.ID] = t
	}
	for _, tid := range ids { // in the order the session triggered them; a deleted trap keeps its id
		t := wire.AlertTrap{ID: tid}
		if row := byID[tid]; row != nil {
			t.Name, t.Path = clip.Fit(row.Name, alertMaxName), clip.Fit(row.Path, alertMaxPath)
		}
		ac.Traps = append(ac.Traps, t)
	}
	return wire.Object(ac), nil
}

// Matches reports whether an endpoint's type filter takes events of type typ (event.Matches).
func Matches(filter []string, typ string) bool { return event.Matches(filter, typ) }
