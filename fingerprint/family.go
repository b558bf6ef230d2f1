package fingerprint

// Family is the client stack family the fingerprints point to, or "" when they point to
// none known.
func Family(ja4, h2, order string) string { return "" }
