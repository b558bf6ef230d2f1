package rest

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 description of the REST routes.
//
//go:embed openapi.json
var OpenAPI []byte

func (a *API) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(OpenAPI)
	return nil
}
