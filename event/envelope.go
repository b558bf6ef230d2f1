package event

import (
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/wire"
)

// Envelope is an event as integrations receive it (wire.Event), as the object a webhook
// delivery's payload stores.
func Envelope(ev *ent.Event) map[string]any { return wire.Object(wire.EventOf(ev)) }
