package graph

// orderName is the GraphQL name of a connection's order field, "" when it has none (by id).
func orderName(set bool, name func() string) string {
	if !set {
		return ""
	}
	return name()
}
