package schematype

// LureConfig is how the lure proxy (flytrap serve --upstream) puts lures into one
// site's pages; the operator sets it with flytrap sites lures. A site without one gets
// DefaultLures.
type LureConfig struct {
	Off   bool     `json:"off,omitempty"`   // no lures in this site's pages
	Paths []string `json:"paths,omitempty"` // path prefixes whose pages get lures; none: every page
	Rate  float64  `json:"rate"`            // share of those pages that get lures, 0 to 1
	Count int      `json:"count"`           // lures per page, 1 to 3
}

// DefaultLures is a site's lure configuration until the operator sets one: every HTML
// page gets two lures.
var DefaultLures = LureConfig{Rate: 1, Count: 2}
