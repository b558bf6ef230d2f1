package decoy

// apiKind is a JSON endpoint (api.go renders it): hidden content in its metadata and fields.
type apiKind struct{}

func init() { register(apiKind{}) }

func (apiKind) About() About {
	return About{Name: "api", Help: "a JSON endpoint", Order: 20, Format: FormatJSON, Listed: true, Stems: []string{
		"/api/internal/v1/", "/api/v2/admin/", "/api/private/", "/internal/api/", "/v1/internal/",
	}}
}

func (apiKind) render(r *renderer) Rendered { return r.api() }
func (apiKind) lureTarget()                 {}
