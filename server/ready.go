package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/flytrap/flytrap/store"
)

const (
	readyTimeout = 2 * time.Second // a write slower than this is as good as none
	readyTTL     = time.Second     // /readyz is public: at most one probe a second
)

// readiness answers whether the database accepts writes: a full or read-only disk,
// a frozen volume or a lock held too long all fail it, where a ping would pass.
type readiness struct {
	db       *store.DB
	log      *slog.Logger
	instance string
	now      func() time.Time
	group    singleflight.Group
	stale    sync.Once // old instances' rows are cleared once per process

	mu  sync.Mutex
	at  time.Time // of the last result
	err error
}

func newReadiness(db *store.DB, log *slog.Logger) *readiness {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return &readiness{db: db, log: log, instance: hex.EncodeToString(b[:]), now: time.Now}
}

var errWriteTimeout = errors.New("the database did not complete a write in time")

// check returns the result of a write probe at most readyTTL old; concurrent callers
// share one probe, and none waits longer than readyTimeout, even if the probe hangs.
func (rd *readiness) check(ctx context.Context) error {
	rd.mu.Lock()
	if !rd.at.IsZero() && rd.now().Sub(rd.at) < readyTTL {
		err := rd.err
		rd.mu.Unlock()
		return err
	}
	rd.mu.Unlock()
	ch := rd.group.DoChan("probe", func() (any, error) {
		// The probe is the group's, not this caller's: it must not end when this caller leaves.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
		defer cancel()
		stale := false
		rd.stale.Do(func() { stale = true })
		err := rd.db.WriteProbe(pctx, rd.instance, rd.now(), stale)
		rd.record(err)
		return nil, err
	})
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		return res.Err
	case <-timer.C:
		rd.record(errWriteTimeout) // the probe hangs past its context: answer, and remember it
		return errWriteTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (rd *readiness) record(err error) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	rd.at, rd.err = rd.now(), err
}

// readyz is GET /readyz: 200 while the database accepts writes, else 503.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ready.check(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "readiness check failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "database": "not accepting writes"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "database": "ok"})
}
