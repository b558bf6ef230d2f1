// Package rest is the REST compatibility layer: the routes of the customer's API
// document, mapped onto the application's use cases (app), which the GraphQL API calls
// too. It holds no query, scoping or validation logic of its own, only the translation of
// a request into a use case's domain types and of the result into the document's shapes.
package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/wire"
)

// API serves the REST routes.
type API struct {
	app  *app.App
	log  *slog.Logger
	opts Options
}

// Options are the REST layer's settings.
type Options struct {
	// Stopping is done when the service begins to shut down: open streams end then.
	Stopping context.Context
	// Heartbeat is the interval of the stream's keep-alive comments.
	Heartbeat time.Duration
}

// New returns the REST API over the application's use cases.
func New(a *app.App, log *slog.Logger, opts Options) *API {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.Stopping == nil {
		opts.Stopping = context.Background()
	}
	return &API{app: a, log: log, opts: opts}
}

// HandlerFunc is a REST handler: it writes a success or returns the error to report.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// serve adapts h to http.Handler, writing its error in the document's shape: graph.Present
// says what the error is, apperr its status, and the field is spelled as this API's
// OpenAPI document spells it.
func (a *API) serve(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkQuery(r.URL.RawQuery)
		if err == nil {
			err = h(w, r)
		}
		if err == nil {
			return
		}
		e := graph.Present(err)
		if e.Kind == apperr.KindInternal {
			a.log.ErrorContext(r.Context(), "REST handler failed", "route", r.Pattern, "err", err)
		}
		if wait := apperr.RetryAfterSeconds(err); wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(wait))
		}
		writeJSON(w, e.Status(), wire.Failure{Error: e.Message(FieldName), ConflictID: e.ConflictID})
	})
}

// checkQuery refuses a query string that does not decode. url.Values from
// r.URL.Query() drops such pairs silently, so ?cursor=%%% would read as no cursor:
// past this check, r.URL.Query() holds every pair the caller sent.
func checkQuery(raw string) error {
	if _, err := url.ParseQuery(raw); err == nil {
		return nil
	}
	// Name the first pair that does not decode, by its parameter when that much decodes.
	for pair := range strings.SplitSeq(raw, "&") {
		_, err := url.ParseQuery(pair)
		if err == nil {
			continue
		}
		field := "query string"
		if name, _, _ := strings.Cut(pair, "="); !strings.Contains(pair, ";") {
			if n, nerr := url.QueryUnescape(name); nerr == nil && n != "" {
				field = clip.Mark(n, maxEcho)
			}
		}
		return apperr.Invalid(field, "is not valid URL encoding (%s)", clip.Mark(err.Error(), maxEcho))
	}
	return apperr.Invalid("query string", "is not valid URL encoding")
}

// maxEcho bounds the caller's text an error message repeats.
const maxEcho = 64

// Error writes {"success": false, "error": msg} with status.
func Error(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, wire.Failure{Error: msg})
}

// ok writes the dashboard wrapper {"success": true, "data": data}.
func ok[T any](w http.ResponseWriter, status int, data T) error {
	writeJSON(w, status, wire.Success[T]{Data: data, Success: true})
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decodeBody reads a JSON object body strictly: unknown fields, wrong types and
// trailing data are errors naming what is wrong.
func decodeBody(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return apperr.Invalid("Content-Type", "must be application/json")
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.Invalid("body", "must hold one JSON object and nothing after it")
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return apperr.Invalid("body", "a JSON object is required")
	case errors.As(err, &te):
		if te.Field == "" {
			return apperr.Invalid("body", "must be a JSON object")
		}
		return apperr.Invalid(te.Field, "must be %s", jsonKind(te.Type.Kind().String()))
	case errors.As(err, &se):
		return apperr.Invalid("body", "is not valid JSON (at byte %d)", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		if name == "" {
			return apperr.Invalid("body", "has a field with an empty name")
		}
		return apperr.Invalid(clip.Mark(name, maxEcho), "is not a known field")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Invalid("body", "is truncated JSON")
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return apperr.Invalid(fe.field, "%s", fe.msg)
	}
	return apperr.Invalid("body", "is not valid JSON")
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "float64":
		return "a number"
	case "struct", "map":
		return "an object"
	case "slice":
		return "an array"
	}
	return "of another type"
}

type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.field + ": " + e.msg }
