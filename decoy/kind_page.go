package decoy

// pageKind is an HTML document (page.go renders it): its hidden content sits in the
// places HTML offers (an HTML comment, off-screen and hidden blocks, meta tags, zero-width text).
type pageKind struct{}

func init() { register(pageKind{}) }

func (pageKind) About() About {
	return About{Name: "page", Help: "an HTML document", Order: 10, Format: FormatHTML, Listed: true, Stems: []string{
		"/internal/docs/", "/admin/portal/", "/wiki/engineering/", "/staff/handbook/",
		"/intranet/reports/", "/docs/internal/", "/backoffice/",
	}}
}

func (pageKind) render(r *renderer) Rendered { return r.page() }
func (pageKind) skeletal()                   {}
func (pageKind) lureTarget()                 {}
