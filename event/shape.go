package event

import (
	"time"

	"github.com/flytrap/flytrap/ent"
)

// Time layouts of the API document: traps and sessions carry milliseconds, events seconds.
const (
	MillisLayout  = "2006-01-02T15:04:05.000Z"
	SecondsLayout = "2006-01-02T15:04:05Z"
)

// Millis formats t as ISO 8601 UTC with milliseconds.
func Millis(t time.Time) string { return t.UTC().Format(MillisLayout) }

// Seconds formats t as ISO 8601 UTC with seconds.
func Seconds(t time.Time) string { return t.UTC().Format(SecondsLayout) }

// TrapData is a trap as the API document shows it; the data of trap.* events.
func TrapData(t *ent.Trap) map[string]any {
	active := 0
	if t.Active {
		active = 1
	}
	return map[string]any{
		"id":          t.ID,
		"name":        t.Name,
		"path":        t.Path,
		"type":        string(t.Type),
		"description": t.Description,
		"active":      active,
		"created_at":  Millis(t.CreatedAt),
		"org_id":      t.OrgID,
		"site_id":     t.SiteID,
	}
}
