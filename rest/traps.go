package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/trap"
	"github.com/flytrap/flytrap/wire"
)

func (a *API) listTraps(w http.ResponseWriter, r *http.Request) error {
	q, err := query(r, "site_id", "path", "type", "active")
	if err != nil {
		return err
	}
	f := app.TrapFilter{SiteID: q.Get("site_id"), Path: q.Get("path")}
	if v := q.Get("type"); v != "" {
		typ, err := enumValue("type", "TrapType", v, false, nil)
		if err != nil {
			return err
		}
		f.Type = trap.Type(typ)
	}
	switch q.Get("active") {
	case "":
	case "1", "true":
		f.Active = new(true)
	case "0", "false":
		f.Active = new(false)
	default:
		return apperr.Invalid("active", "must be 0, 1, true or false")
	}
	ts, err := a.app.ListTraps(r.Context(), f)
	if err != nil {
		return err
	}
	out := make([]wire.Trap, len(ts))
	for i, t := range ts {
		out[i] = wire.TrapOf(t)
	}
	return ok(w, http.StatusOK, out)
}

type createTrapBody struct {
	Name        *string `json:"name"`
	Path        *string `json:"path"`
	Type        *string `json:"type"`
	Description *string `json:"description"`
	PublicTitle *string `json:"public_title"`
	SiteID      *string `json:"site_id"`
}

func (a *API) createTrap(w http.ResponseWriter, r *http.Request) error {
	var body createTrapBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.Name == nil {
		return apperr.Invalid("name", "is required")
	}
	if body.Type == nil {
		return apperr.Invalid("type", "is required")
	}
	typ, err := enumValue("type", "TrapType", *body.Type, false, nil)
	if err != nil {
		return err
	}
	in := app.TrapInput{Name: *body.Name, Path: body.Path, Type: trap.Type(typ), Description: body.Description, PublicTitle: body.PublicTitle, SiteID: body.SiteID}
	if key, keyed := r.Header["Idempotency-Key"]; keyed {
		return a.createTrapOnce(w, r, key, body, in)
	}
	var t *ent.Trap
	err = a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		t, err = a.app.CreateTrap(ctx, in)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusCreated, wire.TrapOf(t))
}

// createTrapOnce is createTrap with an Idempotency-Key (app.CreateTrapOnce): a replay
// answers the first answer again, with Idempotent-Replayed: true.
func (a *API) createTrapOnce(w http.ResponseWriter, r *http.Request, key []string, body createTrapBody, in app.TrapInput) error {
	if len(key) != 1 {
		return apperr.Invalid("Idempotency-Key", "is given more than once")
	}
	var out []byte
	var replayed bool
	err := a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		out, replayed, err = a.app.CreateTrapOnce(ctx, key[0], body, in, func(t *ent.Trap) ([]byte, error) {
			return json.Marshal(wire.Success[wire.Trap]{Data: wire.TrapOf(t), Success: true})
		})
		return err
	})
	if err != nil {
		return err
	}
	w.Header().Set("Idempotent-Replayed", strconv.FormatBool(replayed))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(append(out, '\n'))
	return nil
}

// flag is the document's active flag: 0/1, or true/false.
type flag bool

func (f *flag) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "1", "true":
		*f = true
	case "0", "false":
		*f = false
	default:
		return &fieldError{"active", "must be 0, 1, true or false"}
	}
	return nil
}

type updateTrapBody struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	PublicTitle *string `json:"public_title"`
	Active      *flag   `json:"active"`
}

func (a *API) updateTrap(w http.ResponseWriter, r *http.Request) error {
	var body updateTrapBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.Name == nil && body.Description == nil && body.PublicTitle == nil && body.Active == nil {
		return apperr.Invalid("body", "give at least one of name, description, public_title, active")
	}
	in := app.TrapChanges{Name: body.Name, Description: body.Description, PublicTitle: body.PublicTitle}
	if body.Active != nil {
		active := bool(*body.Active)
		in.Active = &active
	}
	var t *ent.Trap
	err := a.app.InTx(r.Context(), func(ctx context.Context) (err error) {
		t, err = a.app.UpdateTrap(ctx, r.PathValue("id"), in)
		return err
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.TrapOf(t))
}

func (a *API) deleteTrap(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	err := a.app.InTx(r.Context(), func(ctx context.Context) error {
		return a.app.DeleteTrap(ctx, id)
	})
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, wire.Deleted{ID: id, Deleted: true})
}

var _ json.Unmarshaler = (*flag)(nil)
