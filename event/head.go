package event

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/ent"
)

// Head is the newest position ever handed out in org's log (0 before its first event),
// whether or not retention has deleted that event since. ctx must allow reading counters.
func Head(ctx context.Context, c *ent.Client, org string) (int64, error) {
	s, err := c.Sequence.Get(ctx, seqSequence+":"+org)
	if ent.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the event log's head: %w", err)
	}
	return s.Value, nil
}
