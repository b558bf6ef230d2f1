// Package record owns what the trap listener records — hits, sessions, signals and
// prompts — and the counters that follow them (tally). Every write of those rows goes
// through it: the listener's batch writer (Writer.Record), an administrative change or a
// seed (CreateSessions, UpdateSessions, DeleteSessions, CreateHits, CreatePrompts), and
// the retention purge (DeleteExpiredSessions). Each function records its counters as an
// explicit delta in the transaction it writes in (tally.Pending): no ent hook counts these
// rows, so a write that bypasses this package leaves the counters behind (docs/counters.md).
//
// What it stores of a request is detect.Observation, the one struct the listener fills
// and detect.Observe reads: a request fact a signal needs is a field there, and a fact
// the hits table keeps is a column of ent's hit schema, written by name (Hit.Prepare).
package record

import (
	"context"
	"fmt"
	"sync"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/tally"
)

// Writer is the batch writer's storage: it keeps the statement texts it made (one per
// number of rows), so the writer's prepared statements cover every batch.
type Writer struct {
	pg             bool
	hitInserts     sync.Map // the INSERT statement of each number of hit rows (see hitInsert)
	sessionTouches sync.Map // the UPDATE statement of each number of sessions (see sessionTouch)
}

// NewWriter is a writer for a database of dialect dia (dialect.SQLite or dialect.Postgres).
func NewWriter(dia string) *Writer {
	return &Writer{pg: dia == dialect.Postgres}
}

// Batch is what one transaction of the listener's writer stores: hits, each with its
// session and what detect.Observe made of it, and the sessions they changed, each once.
type Batch struct {
	Hits     []*Hit
	Sessions []*Session
}

// Record stores b in tx: new sessions created, changed ones updated (a session whose only
// change is a later last_seen and more hits in a shared statement), hits, signals and
// prompts inserted. Its counters — the hits' hours, the sessions' severities and
// classifications, tripwires, prompts, campaigns (of prompts and of JA4s) and trap_sessions — are added to tx's
// pending delta, written when tx commits.
func (w *Writer) Record(ctx context.Context, tx *ent.Tx, b *Batch) error {
	c := tx.Client()
	counts := tally.Pending(tx)
	var created, touched []*Session
	for _, s := range b.Sessions {
		s.newJA4s = nil // what an earlier, failed attempt noted is not stored
		switch {
		case !s.Stored:
			created = append(created, s)
		case s.onlyTouched():
			touched = append(touched, s)
		default:
			if err := w.saveSession(ctx, c, counts, s); err != nil {
				return err
			}
		}
	}
	if err := createSessions(ctx, c, counts, created); err != nil {
		return err
	}
	if err := w.touchSessions(ctx, c, counts, touched); err != nil {
		return err
	}
	rows := make([][]any, 0, len(b.Hits))
	var nSignals, nPrompts int
	for _, h := range b.Hits {
		if h.err != nil {
			return h.err
		}
		row, err := h.complete()
		if err != nil {
			return err
		}
		rows = append(rows, row)
		counts.Hit(h.Org, h.TrapID, h.At.Unix()/3600)
		if h.JA4 != "" {
			counts.Ja4Hit(h.Org, h.JA4, h.Session.ID, h.Session.IP, h.ID, h.At, h.Session.noteJA4(h.JA4, h.ID))
		}
		nSignals += len(h.Outcome.Firings)
		nPrompts += len(h.Outcome.Prompts)
	}
	if err := w.insertHits(ctx, c, rows); err != nil {
		return err
	}
	if nSignals > 0 {
		if err := insertSignals(ctx, c, b.Hits, nSignals); err != nil {
			return err
		}
	}
	if nPrompts > 0 {
		if err := insertPrompts(ctx, c, counts, b.Hits, nPrompts); err != nil {
			return err
		}
	}
	return nil
}

// Observed takes in what detect.Observe made of one of the session's hits, h.
func (s *Session) Observed(h *Hit, next detect.Session, out detect.Outcome) {
	h.Session, h.Outcome = s, out
	s.Session = next
	s.Dirty = s.Dirty || out.Changed
	s.AddTrips += out.Tripwires
	s.AddProms += len(out.Prompts)
	s.AddHits++
	s.Verdict = out.Verdict
}

// Committed marks s as stored: what the next batch adds starts from here.
func (s *Session) Committed() {
	s.Stored = true
	s.AddHits, s.AddTrips, s.AddProms, s.Dirty, s.StoredVerdict = 0, 0, 0, false, s.Verdict
	s.StoredTraps = len(s.Traps)
	s.committedJA4s()
}

// errf wraps err with what failed.
func errf(what string, err error) error { return fmt.Errorf("%s: %w", what, err) }
