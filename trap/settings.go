package trap

import (
	"errors"
	"time"

	"github.com/flytrap/flytrap/settings"
)

// Declare declares the trap listener's settings over c: the hit queue, the writer's batches
// and the session gap. The defaults are DefaultConfig's. (--trusted-proxies, which fills
// c.TrustedProxies, is declared by the server: the lure proxy believes the same proxies.)
func (c *Config) Declare(s *settings.Set) {
	d := DefaultConfig()
	s.Int(&c.QueueSize, "hit-queue", d.QueueSize, "hits that may wait to be written; beyond it the trap listener answers 503")
	s.Int(&c.BatchSize, "hit-batch", d.BatchSize, "hits written per transaction at most")
	s.Duration(&c.SessionIdle, "session-idle", d.SessionIdle, "idle gap that ends a visitor's session")
	s.Rule(func() error {
		if c.QueueSize < 1 || c.BatchSize < 1 || c.SessionIdle < time.Minute {
			return errors.New("hit-queue and hit-batch must be positive, session-idle at least 1m")
		}
		return nil
	})
}
