package graph

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// orderName is the GraphQL name of a connection's order field, "" when it has none (by id).
func orderName(set bool, name func() string) string {
	if !set {
		return ""
	}
	return name()
}
