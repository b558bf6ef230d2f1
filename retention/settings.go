package retention

import (
	"time"

	"github.com/flytrap/flytrap/settings"
)

// Declare declares retention's settings over c: how long each kind of row is kept, and the
// purges' pace. The defaults are DefaultConfig's; Validate is their rule.
func (c *Config) Declare(s *settings.Set) {
	d := DefaultConfig()
	for _, k := range []struct {
		name, what, doc string
		dst             *time.Duration
		def             time.Duration
	}{
		{"retain-hits", "raw hits (requests with headers and bodies); counters keep counting them", "How long raw hits (requests with headers and bodies) are kept; `30d`, `12h`, or `0` for forever. Counters and session summaries keep counting purged hits ([operations](docs/operations.md))",
			&c.Hits, d.Hits},
		{"retain-signals", "signal firings with their evidence", "How long signal firings with their evidence are kept",
			&c.Signals, d.Signals},
		{"retain-prompts", "captured system prompts", "How long captured system prompts are kept",
			&c.Prompts, d.Prompts},
		{"retain-events", "events of the event log (REST, SSE, GraphQL); an older cursor gets 410", "How long events are kept (REST, SSE, GraphQL); a cursor older than the oldest event kept gets 410 / `CURSOR_EXPIRED`",
			&c.Events, d.Events},
		{"retain-deliveries", "finished webhook deliveries with their attempts", "How long finished webhook deliveries are kept (pending ones stay until they finish)",
			&c.Deliveries, d.Deliveries},
		{"retain-sessions", "sessions, counted from their last hit; their hits, signals and prompts go with them", "Sessions last seen longer ago are deleted with their hits, signals and prompts",
			&c.Sessions, d.Sessions},
		{"retain-hit-hours", "the hourly hit counters (the timeline and the 24-hour figures read the last day)", "How long the hourly hit counters are kept (the timeline and the 24-hour figures read the last day of them)",
			&c.HitHours, d.HitHours},
	} {
		s.Func(k.name, FormatDays(k.def), "how long to keep "+k.what+": 30d, 12h, or 0 for forever", func(v string) error {
			t, err := ParseDays(v)
			*k.dst = t
			return err
		}).Doc(k.doc)
	}
	s.Duration(&c.Interval, "retention-interval", d.Interval, "time between two purges of expired rows").
		Doc("Time between two purges (one instance purges at a time on a shared PostgreSQL)")
	s.Int(&c.BatchSize, "retention-batch", d.BatchSize, "rows a purge deletes per transaction (1 to 10000)")
	s.Duration(&c.Pause, "retention-pause", d.Pause, "rest after each purge batch, so the hit writer and the API get the database")
	s.Rule(func() error { return c.Validate() })
}
