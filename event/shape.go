package event

import (
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/wire"
)

// Time layouts of the API document (wire owns them): traps and sessions carry milliseconds, events seconds.
const (
	MillisLayout  = wire.MillisLayout
	SecondsLayout = wire.SecondsLayout
)

// Millis formats t as ISO 8601 UTC with milliseconds.
func Millis(t time.Time) string { return wire.Millis(t) }

// Seconds formats t as ISO 8601 UTC with seconds.
func Seconds(t time.Time) string { return wire.Seconds(t) }

// TrapData is the data of trap.* events: the trap's wire.Trap.
func TrapData(t *ent.Trap) map[string]any { return wire.Object(wire.TrapOf(t)) }
