package trap

import (
	"errors"
	"fmt"
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
	s.String(&c.JA4Header, "trap-ja4-header", "", "request header in which a CDN in --trusted-proxies passes the client's JA4 (e.g. cf-ja4); ignored from any other peer").
		Doc("Request header in which a CDN or proxy of `--trusted-proxies` passes the client's JA4 TLS fingerprint (e.g. `cf-ja4`); ignored from any other peer. See [deployment](docs/deployment.md#client-fingerprints-behind-a-cdn)").
		DefaultDoc("none")
	s.Duration(&c.SessionIdle, "session-idle", d.SessionIdle, "idle gap that ends a visitor's session")
	s.Rule(func() error {
		if c.QueueSize < 1 || c.BatchSize < 1 || c.SessionIdle < time.Minute {
			return errors.New("hit-queue and hit-batch must be positive, session-idle at least 1m")
		}
		return nil
	})
	s.String(&c.Journal, "hit-journal", "", "directory of this instance's hit journal: a hit is answered once written there, and stored in the database after; off: each answer waits for its hit's database commit").
		Doc("Directory of this instance's hit journal: a hit is answered once written there (safe from a killed process) and stored in the database right after; `off`: each answer waits for its hit's database commit. One directory per instance (it is locked). See [operations](docs/operations.md#the-hit-journal)").
		DefaultDoc("SQLite: `<db>.hits` beside the file; PostgreSQL: `flytrap/hits-<database>-<hash of the URL and --trap-addr>` in the user's cache directory")
	s.Int64(&c.JournalMax, "hit-journal-max", d.JournalMax, "bytes the hit journal may hold on disk, hits not yet stored; beyond it the trap listener answers 503").
		Min(1 << 20)
	s.Func("hit-ack", "journal", "when the trap listener answers a hit: journal (once journaled) or applied (once stored in the database)", func(v string) error {
		switch v {
		case "journal":
			c.AckApplied = false
		case "applied":
			c.AckApplied = true
		default:
			return fmt.Errorf("hit-ack: %q is not journal or applied", v)
		}
		return nil
	}).Doc("When the trap listener answers a hit: `journal` (once journaled: the default) or `applied` (once stored in the database, so that the API shows every hit answered; slower)")
	s.Duration(&c.Signatures.Wait, "signature-wait", d.Signatures.Wait, "longest a signed agent's answer waits for its key directory to be fetched; past it the hit records the signature as unverifiable and the fetch goes on for the next request").
		Doc("Longest a signed agent's answer (Web Bot Auth) waits for its key directory when it is not cached yet; past it the hit records the signature as unverifiable and the fetch goes on for the agent's next request. See [security](docs/security.md#signed-agents-key-directory-fetches)")
	s.Float64(&c.Signatures.Rate, "signature-verify-rate", d.Signatures.Rate, "signed agents' signatures checked per second on this instance at most (burst a tenth of it), a tenth of that from one client network; past it a signed hit records the signature as unverifiable").
		Doc("Signed agents' signatures checked per second on this instance at most (burst a tenth of it), and a tenth of that from one client network (/24, /48): past it a signed hit records its signature as unverifiable, so a flood of forged signatures costs at most this many Ed25519 checks a second and one network cannot take them all")
	s.Rule(func() error {
		if c.Signatures.Rate < 1 {
			return errors.New("signature-verify-rate must be at least 1")
		}
		if c.Signatures.Wait < time.Millisecond || c.Signatures.Wait > time.Second {
			return errors.New("signature-wait must be between 1ms and 1s")
		}
		return nil
	})
}
