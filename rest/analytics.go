package rest

import (
	"net/http"

	"github.com/flytrap/flytrap/wire"
)

func (a *API) overview(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	o, err := a.app.Overview(r.Context())
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, o) // app.Overview's JSON names are the document's
}

func (a *API) severity(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	s, err := a.app.Severity(r.Context())
	if err != nil {
		return err
	}
	return ok(w, http.StatusOK, s)
}

func (a *API) timeline(w http.ResponseWriter, r *http.Request) error {
	if _, err := query(r); err != nil {
		return err
	}
	buckets, err := a.app.Timeline(r.Context())
	if err != nil {
		return err
	}
	out := make([]wire.TimelineBucket, len(buckets))
	for i, b := range buckets {
		out[i] = wire.TimelineBucket{Hour: wire.Seconds(b.Hour), Hits: b.Hits}
	}
	return ok(w, http.StatusOK, out)
}
