package app

import (
	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ids"
	"github.com/flytrap/flytrap/internal/clip"
)

var nameOfPrefix = map[string]string{
	ids.Org: "organization", ids.Site: "site", ids.Trap: "trap", ids.Session: "session",
	ids.Hit: "hit", ids.Event: "event", ids.APIKey: "API key", ids.Signal: "signal", ids.Prompt: "prompt",
	ids.Webhook: "webhook endpoint", ids.Delivery: "webhook delivery",
}

// CheckID refuses an id that is malformed or names another kind of object than prefix.
func CheckID(id, prefix string) error {
	return checkID(id, prefix, "id")
}

// checkID is CheckID naming the field.
func checkID(id, prefix, field string) error {
	if ids.Prefix(id) != prefix {
		return apperr.Invalid(field, "%q is not a %s id (%s_…)", clip.Mark(id, 64), nameOfPrefix[prefix], prefix)
	}
	return nil
}
