package rest

import (
	"encoding/json"
	"net/http"
)

// STIXContentType is the media type of a STIX 2.1 bundle (STIX 2.1 §1.6, TAXII 2.1).
const STIXContentType = "application/stix+json;version=2.1"

// The STIX exports answer the bundle itself, not the dashboard wrapper, so that it can be
// saved and imported as it is (OpenCTI, MISP).
func (a *API) sessionSTIX(w http.ResponseWriter, r *http.Request) error {
	b, err := a.app.SessionSTIX(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeSTIX(w, b)
}

func (a *API) campaignSTIX(w http.ResponseWriter, r *http.Request) error {
	b, err := a.app.CampaignSTIX(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	return writeSTIX(w, b)
}

func writeSTIX(w http.ResponseWriter, bundle map[string]any) error {
	w.Header().Set("Content-Type", STIXContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(bundle)
}
