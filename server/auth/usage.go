package auth

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
)

// KeyUsage remembers when each API key was last used and writes it in batches,
// so a request costs a map write, not a database write.
type KeyUsage struct {
	client *ent.Client
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string]time.Time
}

// NewKeyUsage records usage for client's API keys; Run writes it.
func NewKeyUsage(client *ent.Client, log *slog.Logger) *KeyUsage {
	return &KeyUsage{client: client, log: log, pending: map[string]time.Time{}}
}

// Record notes that key was used at t.
func (u *KeyUsage) Record(key string, t time.Time) {
	u.mu.Lock()
	if t.After(u.pending[key]) {
		u.pending[key] = t
	}
	u.mu.Unlock()
}

// Flush writes what was recorded since the last flush.
func (u *KeyUsage) Flush(ctx context.Context) error {
	u.mu.Lock()
	batch := u.pending
	u.pending = map[string]time.Time{}
	u.mu.Unlock()
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	for id, t := range batch {
		err := u.client.APIKey.UpdateOneID(id).SetLastUsedAt(t.UTC().Truncate(time.Millisecond)).Exec(ctx)
		if err != nil && !ent.IsNotFound(err) {
			u.mu.Lock()
			if t.After(u.pending[id]) {
				u.pending[id] = t // try again next time
			}
			u.mu.Unlock()
			return err
		}
	}
	return nil
}

// Run flushes every interval until ctx ends, then once more.
func (u *KeyUsage) Run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := u.Flush(final); err != nil {
				u.log.Warn("writing API key usage", "err", err)
			}
			return
		case <-tick.C:
			if err := u.Flush(ctx); err != nil {
				u.log.Warn("writing API key usage", "err", err)
			}
		}
	}
}
