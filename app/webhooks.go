package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/sequence"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/webhook"
	"github.com/flytrap/flytrap/wire"
)

// SecretGrace is how long a rotated-out signing secret stays valid.
const SecretGrace = 24 * time.Hour

// PingType is the event type of a test ping.
const PingType = "webhook.ping"

// maxWebhookList bounds ListWebhooks.
const maxWebhookList = 1000

// ListWebhooks is the caller's webhook endpoints, oldest first, at most 1,000.
func (a *App) ListWebhooks(ctx context.Context) ([]*ent.WebhookEndpoint, error) {
	eps, err := a.ent(ctx).WebhookEndpoint.Query().
		Order(ent.Asc(webhookendpoint.FieldCreatedAt), ent.Asc(webhookendpoint.FieldID)).Limit(maxWebhookList).All(ctx)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return eps, nil
}

// Webhook is one of the caller's webhook endpoints.
func (a *App) Webhook(ctx context.Context, id string) (*ent.WebhookEndpoint, error) {
	if err := CheckID(id, ids.Webhook); err != nil {
		return nil, err
	}
	n, err := a.Node(ctx, id)
	if err != nil {
		return nil, err
	}
	e, isEndpoint := n.(*ent.WebhookEndpoint)
	if !isEndpoint {
		return nil, apperr.NotFound("webhook endpoint")
	}
	return e, nil
}

// WebhookInput is a new webhook endpoint, ent's CreateWebhookEndpointInput's fields.
type WebhookInput struct {
	URL             string
	Description     *string
	EventTypes      []string
	Active          *bool
	Format          *webhookendpoint.Format
	ThrottleMinutes *int
	Authorization   *string
}

// WebhookChanges are the fields of an endpoint to change (nil: unchanged), ent's
// UpdateWebhookEndpointInput's.
type WebhookChanges struct {
	URL              *string
	Description      *string
	EventTypes       []string
	AppendEventTypes []string
	Active           *bool
	Format           *webhookendpoint.Format
	ThrottleMinutes  *int
	Authorization    *string
}

// WebhookWithSecret is an endpoint with its signing secret, shown once: when it is made and
// when the secret is rotated.
type WebhookWithSecret struct {
	Endpoint *ent.WebhookEndpoint `json:"endpoint"`
	Secret   string               `json:"secret"`
	// Warning, on creation, says why deliveries will fail and what an operator runs to allow
	// them: the URL's host is a private address the organization may not reach.
	Warning *string `json:"warning,omitempty"`
}

// checkDestination enforces that syslog URLs and the cef format go together: a syslog
// receiver gets CEF (the default there), and CEF is sent only to syslog.
func checkDestination(url string, format *webhookendpoint.Format) (*webhookendpoint.Format, error) {
	syslog := webhook.IsSyslogURL(url)
	switch {
	case syslog && format == nil:
		f := webhookendpoint.FormatCef
		return &f, nil
	case syslog && *format != webhookendpoint.FormatCef:
		return nil, apperr.Invalid("format", "a syslog destination (%s) takes format cef", url[:strings.Index(url, "://")+3])
	case !syslog && format != nil && *format == webhookendpoint.FormatCef:
		return nil, apperr.Invalid("format", "cef is sent over syslog: give a syslog+tcp://host:port or syslog+tls://host:port URL")
	}
	return format, nil
}

// CreateWebhook makes a webhook endpoint with a new signing secret.
func (a *App) CreateWebhook(ctx context.Context, in WebhookInput) (*WebhookWithSecret, error) {
	f, err := checkDestination(in.URL, in.Format)
	if err != nil {
		return nil, err
	}
	in.Format = f
	secret := webhook.NewSecret()
	ep, err := a.ent(ctx).WebhookEndpoint.Create().SetInput(ent.CreateWebhookEndpointInput(in)).SetSecret(secret).Save(ctx)
	if err != nil {
		return nil, err
	}
	out := &WebhookWithSecret{Endpoint: ep, Secret: secret}
	org, err := a.ent(ctx).Organization.Get(privacy.DecisionContext(ctx, privacy.Allow), ep.OrgID)
	if err != nil {
		return nil, err
	}
	n := webhook.OrgNetwork(org)
	g := webhook.Guard{AllowPrivate: a.WebhookNetwork.AllowPrivate || n.AllowPrivate,
		Allow: append(slices.Clip(a.WebhookNetwork.Allow), n.Allow...)}
	if w := webhook.PrivateHint(ctx, ep.URL, ep.OrgID, g); w != "" {
		out.Warning = &w
	}
	return out, nil
}

// UpdateWebhook changes an endpoint; turned on again, it starts afresh (its failure state cleared).
func (a *App) UpdateWebhook(ctx context.Context, id string, in WebhookChanges) (*ent.WebhookEndpoint, error) {
	if err := checkID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	if in.URL != nil || in.Format != nil {
		cur, err := a.ent(ctx).WebhookEndpoint.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		url, format := cur.URL, cur.Format
		if in.URL != nil {
			url = *in.URL
		}
		if in.Format != nil {
			format = *in.Format
		}
		if webhook.IsSyslogURL(url) && in.Format == nil && format != webhookendpoint.FormatCef {
			f := webhookendpoint.FormatCef // moved to syslog: CEF, the only format there
			in.Format, format = &f, f
		}
		if _, err := checkDestination(url, &format); err != nil {
			return nil, err
		}
	}
	u := a.ent(ctx).WebhookEndpoint.UpdateOneID(id).SetInput(ent.UpdateWebhookEndpointInput(in))
	if in.Active != nil && *in.Active {
		u.ClearFailingSince().SetDisabledReason("") // turned on again: a fresh start
	}
	return u.Save(ctx)
}

// DeleteWebhook deletes an endpoint and its deliveries.
func (a *App) DeleteWebhook(ctx context.Context, id string) error {
	if err := checkID(id, ids.Webhook, "id"); err != nil {
		return err
	}
	c := a.ent(ctx)
	if err := c.WebhookEndpoint.DeleteOneID(id).Exec(ctx); err != nil {
		return err
	}
	// The endpoint's manual-delivery limiter row goes with it.
	_, err := c.Sequence.Delete().Where(sequence.ID(manualKey(id))).Exec(privacy.DecisionContext(ctx, privacy.Allow))
	return err
}

// RotateWebhookSecret gives an endpoint a new signing secret. The outgoing secret stays valid
// for SecretGrace; a secret rotated out earlier is dropped at once.
func (a *App) RotateWebhookSecret(ctx context.Context, id string) (*WebhookWithSecret, error) {
	if err := checkID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	c := a.ent(ctx)
	ep, err := c.WebhookEndpoint.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	secret := webhook.NewSecret()
	ep, err = c.WebhookEndpoint.UpdateOne(ep).
		SetSecret(secret).
		SetPreviousSecret(ep.Secret).
		SetPreviousSecretExpiresAt(a.now().UTC().Add(SecretGrace).Truncate(time.Millisecond)).
		Save(ctx)
	if err != nil {
		return nil, err
	}
	return &WebhookWithSecret{Endpoint: ep, Secret: secret}, nil
}

// RedeliverWebhook queues a new delivery of the same message (same webhook-id, so a receiver
// that already has it can drop it). Given endpointID, a delivery of another endpoint is not
// found, as if it did not exist.
func (a *App) RedeliverWebhook(ctx context.Context, deliveryID string, endpointID *string) (*ent.WebhookDelivery, error) {
	if endpointID != nil {
		if err := checkID(*endpointID, ids.Webhook, "endpointID"); err != nil {
			return nil, err
		}
	}
	if err := checkID(deliveryID, ids.Delivery, "deliveryID"); err != nil {
		return nil, err
	}
	c := a.ent(ctx)
	d, err := c.WebhookDelivery.Get(ctx, deliveryID)
	if endpointID != nil && (ent.IsNotFound(err) || err == nil && d.EndpointID != *endpointID) {
		return nil, apperr.NotFound("webhook delivery")
	}
	if err != nil {
		return nil, err
	}
	ep, err := c.WebhookEndpoint.Get(ctx, d.EndpointID)
	if err != nil {
		return nil, err
	}
	if !ep.Active {
		return nil, apperr.Conflict("endpoint %s is not active; turn it on first", ep.ID)
	}
	if err := a.takeManual(ctx, ep.ID); err != nil {
		return nil, err
	}
	return a.queueDelivery(ctx, ep, "", d.MessageID, d.EventType, d.Payload)
}

// PingWebhook queues a webhook.ping message to an endpoint.
func (a *App) PingWebhook(ctx context.Context, id string) (*ent.WebhookDelivery, error) {
	if err := checkID(id, ids.Webhook, "id"); err != nil {
		return nil, err
	}
	ep, err := a.ent(ctx).WebhookEndpoint.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := a.takeManual(ctx, ep.ID); err != nil {
		return nil, err
	}
	msg := ids.New(ids.Delivery)
	payload := wire.Object(wire.Event{ID: msg, Type: PingType, APIVersion: event.APIVersion, CreatedAt: wire.Seconds(a.now()),
		Data: wire.Object(wire.Ping{EndpointID: ep.ID, OrgID: ep.OrgID})})
	return a.queueDelivery(ctx, ep, msg, msg, PingType, payload)
}

// Deliveries is a page of one endpoint's deliveries, newest first, optionally of one status.
// The connection arguments are entgql's: GraphQL passes its own, ListDeliveries a Page's.
func (a *App) Deliveries(ctx context.Context, endpointID string, after *entgql.Cursor[string], first *int, before *entgql.Cursor[string], last *int, status *webhookdelivery.Status) (*ent.WebhookDeliveryConnection, error) {
	if err := checkID(endpointID, ids.Webhook, "endpointID"); err != nil {
		return nil, err
	}
	if err := CheckCursors(after, before, ids.Delivery, ent.WebhookDeliveryOrderFieldCreatedAt.String()); err != nil {
		return nil, err
	}
	c := a.ent(ctx)
	if _, err := c.WebhookEndpoint.Get(ctx, endpointID); err != nil {
		return nil, err
	}
	q := c.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(endpointID))
	if status != nil {
		q = q.Where(webhookdelivery.StatusEQ(*status))
	}
	return q.Paginate(ctx, after, first, before, last, ent.WithWebhookDeliveryOrder(&ent.WebhookDeliveryOrder{
		Field: ent.WebhookDeliveryOrderFieldCreatedAt, Direction: entgql.OrderDirectionDesc,
	}))
}

// ListDeliveries is a page of one endpoint's deliveries, newest first, of status when it is
// not empty (a WebhookDeliveryStatus value).
func (a *App) ListDeliveries(ctx context.Context, endpointID, status string, p Page) (*Paged[*ent.WebhookDelivery], error) {
	after, err := p.after(ids.Delivery, ent.WebhookDeliveryOrderFieldCreatedAt.String())
	if err != nil {
		return nil, err
	}
	var st *webhookdelivery.Status
	if status != "" {
		s := webhookdelivery.Status(status)
		st = &s
	}
	conn, err := a.Deliveries(ctx, endpointID, after, &p.Limit, nil, nil, st)
	if err != nil {
		return nil, err
	}
	return paged(conn.Edges, func(e *ent.WebhookDeliveryEdge) *ent.WebhookDelivery { return e.Node }, conn.PageInfo), nil
}

// queueDelivery writes a pending delivery. Deliveries are the system's to write, so the
// caller's right to the endpoint was checked by reading it first.
func (a *App) queueDelivery(ctx context.Context, ep *ent.WebhookEndpoint, id, msg, typ string, payload map[string]any) (*ent.WebhookDelivery, error) {
	now := a.now().UTC().Truncate(time.Millisecond)
	create := a.ent(ctx).WebhookDelivery.Create().
		SetOrgID(ep.OrgID).
		SetEndpointID(ep.ID).
		SetMessageID(msg).
		SetEventType(typ).
		SetPayload(payload).
		SetCreatedAt(now).
		SetNextAttemptAt(now)
	if id != "" {
		create.SetID(id) // a ping's webhook-id is its delivery id
	}
	d, err := create.Save(privacy.DecisionContext(ctx, privacy.Allow))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ManualLimit bounds the deliveries callers ask for (pings, redeliveries) per endpoint: they
// make this service send requests, so a caller could otherwise aim it at a receiver at will.
type ManualLimit struct {
	PerMinute float64 // sustained rate
	Burst     int     // sent at once before the rate applies
}

// DefaultManualLimit is 6 a minute with a burst of 3.
var DefaultManualLimit = ManualLimit{PerMinute: 6, Burst: 3}

func manualKey(endpoint string) string { return "webhook-manual:" + endpoint }

// takeManual spends one of the endpoint's manual deliveries or refuses with the wait. The
// state is one row per endpoint (a GCRA "theoretical arrival time" in milliseconds) locked by
// the upsert until the caller's transaction ends, so every instance shares one limit and
// concurrent requests queue rather than overshoot. A refused request spends nothing.
func (a *App) takeManual(ctx context.Context, endpoint string) error {
	lim := a.Manual
	if lim.PerMinute <= 0 || lim.Burst < 1 {
		return nil
	}
	c := a.ent(ctx)
	sys := privacy.DecisionContext(ctx, privacy.Allow)
	key := manualKey(endpoint)
	if err := c.Sequence.Create().SetID(key).SetValue(0).
		OnConflictColumns(sequence.FieldID).AddValue(0).Exec(sys); err != nil {
		return fmt.Errorf("manual delivery limit: %w", err)
	}
	row, err := c.Sequence.Get(sys, key)
	if err != nil {
		return fmt.Errorf("manual delivery limit: %w", err)
	}
	interval := max(int64(float64(time.Minute.Milliseconds())/lim.PerMinute), 1)
	now := a.now().UnixMilli()
	tat := max(row.Value, now) + interval
	if wait := time.Duration(tat-now-int64(lim.Burst)*interval) * time.Millisecond; wait > 0 {
		return apperr.TooManyFor(wait, "this endpoint was pinged or redelivered to too often; retry in %ds",
			int((wait+time.Second-1)/time.Second))
	}
	return c.Sequence.UpdateOneID(key).SetValue(tat).Exec(sys)
}
