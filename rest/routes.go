package rest

import (
	"net/http"
	"strings"
)

// Route is one entry of the route table.
type Route struct {
	Pattern string // a net/http ServeMux pattern with its method
	Handler http.Handler
}

// StreamRoute is the event stream's route: it lives as long as its client stays.
const StreamRoute = "GET /api/v1/events/stream"

// Routes is the whole REST surface, one line a route.
func (a *API) Routes() []Route {
	return []Route{
		{"GET /dashboard/api/traps", a.serve(a.listTraps)},
		{"POST /dashboard/api/traps", a.serve(a.createTrap)},
		{"PATCH /dashboard/api/traps/{id}", a.serve(a.updateTrap)},
		{"DELETE /dashboard/api/traps/{id}", a.serve(a.deleteTrap)},
		{"GET /dashboard/api/sessions", a.serve(a.listSessions)},
		{"GET /dashboard/api/sessions/{id}", a.serve(a.getSession)},
		{"GET /dashboard/api/sessions/{id}/stix", a.serve(a.sessionSTIX)},
		{"GET /dashboard/api/campaigns/{id}/stix", a.serve(a.campaignSTIX)},
		{"POST /dashboard/api/triage", a.serve(a.triageSessions)},
		{"GET /dashboard/api/gate", a.serve(a.gate)},
		{"GET /dashboard/api/analytics/overview", a.serve(a.overview)},
		{"GET /dashboard/api/analytics/severity", a.serve(a.severity)},
		{"GET /dashboard/api/analytics/timeline", a.serve(a.timeline)},
		{"GET /dashboard/api/webhooks", a.serve(a.listWebhooks)},
		{"POST /dashboard/api/webhooks", a.serve(a.createWebhook)},
		{"GET /dashboard/api/webhooks/{id}", a.serve(a.getWebhook)},
		{"PATCH /dashboard/api/webhooks/{id}", a.serve(a.updateWebhook)},
		{"DELETE /dashboard/api/webhooks/{id}", a.serve(a.deleteWebhook)},
		{"POST /dashboard/api/webhooks/{id}/rotate-secret", a.serve(a.rotateWebhookSecret)},
		{"POST /dashboard/api/webhooks/{id}/ping", a.serve(a.pingWebhook)},
		{"GET /dashboard/api/webhooks/{id}/deliveries", a.serve(a.listDeliveries)},
		{"POST /dashboard/api/webhooks/{id}/deliveries/{delivery_id}/redeliver", a.serve(a.redeliverWebhook)},
		{"GET /api/v1/events", a.serve(a.listEvents)},
		{StreamRoute, a.serve(a.streamEvents)},
	}
}

// PublicRoutes need no credentials.
func (a *API) PublicRoutes() []Route {
	return []Route{
		{"GET /api/openapi.json", a.serve(a.openAPI)},
	}
}

// MethodNotAllowed answers the routes' paths for methods they do not serve: the
// mux prefers a pattern with a method, so these catch only the rest.
func (a *API) MethodNotAllowed() []Route {
	allow := map[string][]string{}
	var paths []string
	for _, rt := range append(a.Routes(), a.PublicRoutes()...) {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		if _, seen := allow[path]; !seen {
			paths = append(paths, path)
		}
		allow[path] = append(allow[path], method)
	}
	out := make([]Route, 0, len(paths))
	for _, p := range paths {
		methods := strings.Join(allow[p], ", ")
		out = append(out, Route{p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			Error(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed here (allowed: "+methods+")")
		})})
	}
	return out
}
