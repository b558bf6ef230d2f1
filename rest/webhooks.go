package rest

import (
	"context"
	"net/http"
	"strings"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/wire"
)

func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	eps, err := a.app.ListWebhooks(r.Context())
	if err != nil {
		return err
	}
	out := make([]wire.WebhookEndpoint, len(eps))
	for i, e := range eps {
		out[i] = wire.WebhookEndpointOf(e)
	}
	return ok(w, http.StatusOK, out)
}

func (a *API) getWebhook(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	e, err := a.app.Webhook(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
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
	in := app.WebhookInput{URL: *body.URL, Description: body.Description, Active: body.active(),
		Format: f, ThrottleMinutes: body.ThrottleMinutes, Authorization: body.Authorization}
	if body.EventTypes != nil {
		in.EventTypes = *body.EventTypes
	}
	var out wire.WebhookEndpointWithSecret
	err = a.app.InTx(r.Context(), func(ctx context.Context) error {
		p, err := a.app.CreateWebhook(ctx, in)
		if err != nil {
			return err
		}
		out = wire.WebhookEndpointWithSecret{WebhookEndpoint: wire.WebhookEndpointOf(p.Endpoint), Secret: p.Secret}
		if p.Warning != nil {
			out.Warning = *p.Warning
		}
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
	in := app.WebhookChanges{URL: body.URL, Description: body.Description, Active: body.active(),
		Format: f, ThrottleMinutes: body.ThrottleMinutes, Authorization: body.Authorization}
	if body.EventTypes != nil {
		in.EventTypes = *body.EventTypes
	}
	if body.URL == nil && body.Description == nil && body.EventTypes == nil && body.Active == nil &&
		body.Format == nil && body.ThrottleMinutes == nil && body.Authorization == nil {
		return apperr.Invalid("body", "give at least one of url, description, event_types, active, format, throttle_minutes, authorization")
	}
	var e *ent.WebhookEndpoint
	err = a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		e, err = a.app.UpdateWebhook(ctx, r.PathValue("id"), in)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.WebhookEndpointOf(e))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := a.app.InTx(r.Context(), func(ctx context.Context) error {
		return a.app.DeleteWebhook(ctx, id)
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.Deleted{ID: id, Deleted: true})
}

func (a *API) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	var out wire.WebhookEndpointWithSecret
	err := a.app.InTx(r.Context(), func(ctx context.Context) error {
		p, err := a.app.RotateWebhookSecret(ctx, r.PathValue("id"))
		if err != nil {
			return err
		}
		out = wire.WebhookEndpointWithSecret{WebhookEndpoint: wire.WebhookEndpointOf(p.Endpoint), Secret: p.Secret}
		if p.Warning != nil {
			out.Warning = *p.Warning
		}
		return nil
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, out)
}

func (a *API) pingWebhook(w http.ResponseWriter, r *http.Request) error {
	var d *ent.WebhookDelivery
	err := a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		d, err = a.app.PingWebhook(ctx, r.PathValue("id"))
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
	err := a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		d, err = a.app.RedeliverWebhook(ctx, did, &id)
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
	var status string
	if v := q.Get("status"); v != "" {
		if status, err = enumValue("status", "WebhookDeliveryStatus", v, true, strings.ToLower); err != nil {
			return err
		}
	}
	p, err := a.app.ListDeliveries(r.Context(), r.PathValue("id"), status, app.Page{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	return page(w, p, wire.WebhookDeliveryOf)
}
