package rest

import (
	"context"
	"net/http"
	"strings"

	"entgo.io/contrib/entgql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/wire"
)

// maxWebhookList bounds GET /dashboard/api/webhooks.
const maxWebhookList = 1000

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	order := &ent.WebhookEndpointOrder{Field: ent.WebhookEndpointOrderFieldCreatedAt, Direction: entgql.OrderDirectionAsc}
	out := []wire.WebhookEndpoint{}
	var after *entgql.Cursor[string]
	for len(out) < maxWebhookList {
		page := 100
		conn, err := a.res.Query().WebhookEndpoints(r.Context(), after, &page, nil, nil, order, nil)
		if err != nil {
			return err
		}
		for _, e := range conn.Edges {
			out = append(out, wire.WebhookEndpointOf(e.Node))
		}
		if !conn.PageInfo.HasNextPage {
			break
		}
		after = conn.PageInfo.EndCursor
	}
	return ok(w, http.StatusOK, out)
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := graph.CheckID(id, ids.Webhook); err != nil {
		return err
	}
	n, err := a.res.Query().Node(r.Context(), id)
	if err != nil {
		return err
	}
	e, isEndpoint := n.(*ent.WebhookEndpoint)
	if !isEndpoint {
		return apperr.NotFound("webhook endpoint")
	}
	return ok(w, http.StatusOK, wire.WebhookEndpointOf(e))
}

type webhookBody struct {
	URL             *string   `json:"url"`
	Description     *string   `json:"description"`
	EventTypes      *[]string `json:"event_types"`
	Active          *flag     `json:"active"`
	Format          *string   `json:"format"`
	ThrottleMinutes *int      `json:"throttle_minutes"`
	Authorization   *string   `json:"authorization"`
}

func (b webhookBody) format() (*webhookendpoint.Format, error) {
	if b.Format == nil {
		return nil, nil
	}
	f, err := enumValue("format", "WebhookFormat", *b.Format, false, nil)
	if err != nil {
		return nil, err
	}
	return ptr(webhookendpoint.Format(f)), nil
}

func (b webhookBody) active() *bool {
	if b.Active == nil {
		return nil
	}
	v := bool(*b.Active)
	return &v
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) error {
	var body webhookBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.URL == nil {
		return apperr.Invalid("url", "is required")
	}
	f, err := body.format()
	if err != nil {
		return err
	}
	in := ent.CreateWebhookEndpointInput{URL: *body.URL, Description: body.Description, Active: body.active(),
		Format: f, ThrottleMinutes: body.ThrottleMinutes, Authorization: body.Authorization}
	if body.EventTypes != nil {
		in.EventTypes = *body.EventTypes
	}
	var out wire.WebhookEndpointWithSecret
	err = a.inTx(r.Context(), func(ctx context.Context) error {
		p, err := a.res.Mutation().CreateWebhookEndpoint(ctx, in)
		if err != nil {
			return err
		}
		out = wire.WebhookEndpointWithSecret{WebhookEndpoint: wire.WebhookEndpointOf(p.Endpoint), Secret: p.Secret}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusCreated, out)
}

func (a *API) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	var body webhookBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	f, err := body.format()
	if err != nil {
		return err
	}
	in := ent.UpdateWebhookEndpointInput{URL: body.URL, Description: body.Description, Active: body.active(),
		Format: f, ThrottleMinutes: body.ThrottleMinutes, Authorization: body.Authorization}
	if body.EventTypes != nil {
		in.EventTypes = *body.EventTypes
	}
	if body.URL == nil && body.Description == nil && body.EventTypes == nil && body.Active == nil &&
		body.Format == nil && body.ThrottleMinutes == nil && body.Authorization == nil {
		return apperr.Invalid("body", "give at least one of url, description, event_types, active, format, throttle_minutes, authorization")
	}
	var e *ent.WebhookEndpoint
	err = a.inTx(r.Context(), func(ctx context.Context) (err error) {
		e, err = a.res.Mutation().UpdateWebhookEndpoint(ctx, r.PathValue("id"), in)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.WebhookEndpointOf(e))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := a.inTx(r.Context(), func(ctx context.Context) error {
		_, err := a.res.Mutation().DeleteWebhookEndpoint(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.Deleted{ID: id, Deleted: true})
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	var out wire.WebhookEndpointWithSecret
	err := a.inTx(r.Context(), func(ctx context.Context) error {
		p, err := a.res.Mutation().RotateWebhookSecret(ctx, r.PathValue("id"))
		if err != nil {
			return err
		}
		out = wire.WebhookEndpointWithSecret{WebhookEndpoint: wire.WebhookEndpointOf(p.Endpoint), Secret: p.Secret}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, out)
}

func (a *API) pingWebhook(w http.ResponseWriter, r *http.Request) error {
	var d *ent.WebhookDelivery
	err := a.inTx(r.Context(), func(ctx context.Context) (err error) {
		d, err = a.res.Mutation().PingWebhookEndpoint(ctx, r.PathValue("id"))
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusAccepted, wire.WebhookDeliveryOf(d))
}

func (a *API) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	id, did := r.PathValue("id"), r.PathValue("delivery_id")
	var d *ent.WebhookDelivery
	err := a.inTx(r.Context(), func(ctx context.Context) (err error) {
		d, err = a.res.Mutation().RedeliverWebhook(ctx, did, &id)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusAccepted, wire.WebhookDeliveryOf(d))
}

func (a *API) listDeliveries(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "limit", "cursor", "status")
	if err != nil {
		return err
	}
	limit, err := limitParam(q)
	if err != nil {
		return err
	}
	var status *webhookdelivery.Status
	if v := q.Get("status"); v != "" {
		s, err := enumValue("status", "WebhookDeliveryStatus", v, true, strings.ToLower)
		if err != nil {
			return err
		}
		status = ptr(webhookdelivery.Status(s))
	}
	after, err := cursorParam(q, ids.Delivery, ent.WebhookDeliveryOrderFieldCreatedAt.String())
	if err != nil {
		return err
	}
	conn, err := a.res.Query().WebhookDeliveries(r.Context(), r.PathValue("id"), after, &limit, nil, nil, status)
	if err != nil {
		return err
	}
	data := make([]wire.WebhookDelivery, 0, len(conn.Edges))
	for _, e := range conn.Edges {
		data = append(data, wire.WebhookDeliveryOf(e.Node))
	}
	return page(w, data, conn.PageInfo)
}
