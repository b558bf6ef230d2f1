package event

import "github.com/flytrap/flytrap/ent"

// Envelope is an event as integrations receive it: the REST list, the stream and webhooks.
func Envelope(ev *ent.Event) map[string]any {
	data := ev.Data
	if data == nil {
		data = map[string]any{}
	}
	return map[string]any{
		"id":          ev.ID,
		"type":        ev.Type,
		"api_version": ev.APIVersion,
		"created_at":  Seconds(ev.CreatedAt),
		"data":        data,
	}
}
