package trap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/record"
)

// journalEntry is a hit as the journal keeps it: the hit (its request as observed, what
// the listener decided) and the tokens it carried. The writer's part (its session, what
// detect made of it) is made when it is applied.
type journalEntry struct {
	Hit  *record.Hit
	Refs []decoy.TokenRef `json:",omitempty"`
}

// encodeHit appends the hit's journal record to b (journalcodec.go).
func encodeHit(b []byte, rec *hitRecord) ([]byte, error) {
	return appendEntry(b, &rec.Hit, rec.refs)
}

// decodeHit reads a journal record: binary (encodeHit, or its first layout), or JSON as
// earlier versions wrote.
func decodeHit(payload []byte) (*hitRecord, error) {
	var en journalEntry
	if len(payload) > 0 && (payload[0] == journalBinary || payload[0] == journalBinaryV1) {
		h, refs, err := readEntry(payload)
		if err != nil {
			return nil, err
		}
		en = journalEntry{Hit: h, Refs: refs}
	} else if err := json.Unmarshal(payload, &en); err != nil {
		return nil, err
	}
	if en.Hit == nil || en.Hit.ID == "" {
		return nil, errors.New("a journal record with no hit")
	}
	rec := &hitRecord{Hit: *en.Hit, refs: en.Refs}
	rec.Hit.Prepare() // its row; TrapID and TrapType were journaled
	return rec, nil
}

// journalHit writes the hit to the journal and queues it to be applied. False when it is
// not kept (the queue or the journal full, the journal failing): the visitor was told
// 503, to retry.
func (e *Engine) journalHit(rec *hitRecord) (*job, error) {
	if err := rec.Err(); err != nil { // it would fail to apply, and stay in the journal for good
		return nil, err
	}
	if e.pending.Add(1) > int64(cap(e.queue)) {
		e.pending.Add(-1)
		return nil, ErrOverloaded
	}
	buf := payloads.Get().(*[]byte)
	payload, err := encodeHit((*buf)[:0], rec)
	if err == nil {
		var seg *segment
		seg, err = e.journal.append(payload) // copies payload before it returns
		if cap(payload) <= 64<<10 {
			*buf = payload[:0]
			payloads.Put(buf)
		}
		if err == nil {
			j := &job{rec: rec, seg: seg}
			// Past half the queue the writer is behind: the answer waits for its hit to be
			// applied (as with AckApplied), so a client that keeps a few connections busy slows
			// down to the writer's pace instead of filling the queue and being shed with 503.
			if e.cfg.AckApplied || e.pending.Load() > int64(cap(e.queue))/2 {
				j.done = make(chan error, 1)
			}
			e.visits.touch(visitorKey(rec.Org, rec.IP, rec.UA), rec.At)
			e.unapplied.Store(rec.ID, rec.Org)
			e.queue <- j // never blocks: pending counts what the queue holds
			return j, nil
		}
	}
	e.pending.Add(-1)
	return nil, err
}

// apply writes a batch of journaled hits: in one transaction, else one by one, each tried
// again until it is stored (the journal keeps it meanwhile; new hits are journaled until
// the queue or the journal is full, then shed). Applied hits are released from the
// journal; a hit still unapplied when stop is closed stays there, for the next start
// (false).
func (e *Engine) apply(ctx context.Context, batch []*job, stop <-chan struct{}) bool {
	err := e.writeBatchObserved(ctx, batch)
	if err == nil {
		e.applied(batch)
		return true
	}
	e.log.Warn("applying a batch of journaled hits failed; applying them one by one", "hits", len(batch), "err", err)
	for _, j := range batch {
		if !e.applyOne(ctx, j, stop) {
			return false
		}
	}
	return true
}

// applyOne writes one journaled hit, trying again (every 50 ms, doubling to 5 s) until it
// is stored or stop is closed. A hit is never dropped: a hit ent's validators refuse is
// never journaled (journalHit), and any other failure is the database's, which the
// operator sees in the log and in flytrap_writer_batch_errors_total.
func (e *Engine) applyOne(ctx context.Context, j *job, stop <-chan struct{}) bool {
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		todo, err := e.unstored(ctx, []*job{j}) // its commit may have happened, its answer lost
		if err == nil && len(todo) > 0 {
			err = e.writeBatchObserved(ctx, todo)
		}
		if err == nil {
			e.applied([]*job{j})
			return true
		}
		e.log.Error("applying a journaled hit failed; trying again", "hit", j.rec.ID, "attempt", attempt, "err", err)
		select {
		case <-time.After(wait):
		case <-stop: // shutting down: it stays in the journal
			return false
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// applied releases stored hits from the journal and answers requests waiting for them.
func (e *Engine) applied(batch []*job) {
	var seg *segment
	n := 0
	for _, j := range batch {
		if j.seg != seg {
			if seg != nil {
				e.journal.applied(seg, n)
			}
			seg, n = j.seg, 0
		}
		n++
		if j.seg != nil {
			e.unapplied.Delete(j.rec.ID)
		}
		if j.done != nil {
			j.done <- nil
		}
	}
	if seg != nil {
		e.journal.applied(seg, n)
	}
}

// unstored is the part of batch not stored yet: a hit is found by its id (unique, made
// with it), within a second of its time (on PostgreSQL, the day partitions it can be in).
func (e *Engine) unstored(ctx context.Context, batch []*job) ([]*job, error) {
	list := make([]string, len(batch))
	from, to := batch[0].rec.At, batch[0].rec.At
	for i, j := range batch {
		list[i] = j.rec.ID
		from, to = minTime(from, j.rec.At), maxTime(to, j.rec.At)
	}
	found, err := e.client.Hit.Query().
		Where(hit.IDIn(list...), hit.ReceivedAtGTE(from.Add(-time.Second)), hit.ReceivedAtLTE(to.Add(time.Second))).
		IDs(privacy.DecisionContext(ctx, privacy.Allow))
	if err != nil {
		return nil, fmt.Errorf("look up journaled hits: %w", err)
	}
	if len(found) == 0 {
		return batch, nil
	}
	stored := make(map[string]bool, len(found))
	for _, id := range found {
		stored[id] = true
	}
	out := batch[:0:0]
	for _, j := range batch {
		if !stored[j.rec.ID] {
			out = append(out, j)
		}
	}
	return out, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// replay applies what an earlier run journaled and did not apply, before any new hit:
// each segment's records in order, in batches, without the hits already stored (a batch
// committed before the process ended whose segment stayed), then removes the segment.
func (e *Engine) replay(ctx context.Context, stop <-chan struct{}) {
	for _, path := range e.journal.oldSegments() {
		var batch []*job
		flush := func() bool {
			if len(batch) == 0 {
				return true
			}
			todo, err := e.unstored(ctx, batch)
			for err != nil {
				e.log.Error("replaying the hit journal", "err", err)
				select {
				case <-time.After(time.Second):
				case <-stop:
					return false
				}
				todo, err = e.unstored(ctx, batch)
			}
			if len(todo) > 0 && !e.apply(ctx, todo, stop) {
				return false
			}
			e.replayedHits.Add(int64(len(todo)))
			batch = batch[:0]
			return true
		}
		complete := true
		torn, err := readSegment(path, func(payload []byte) error {
			rec, err := decodeHit(payload)
			if err != nil {
				e.log.Error("an unreadable record in the hit journal; skipped", "segment", path, "err", err)
				return nil
			}
			batch = append(batch, &job{rec: rec})
			if len(batch) == e.cfg.BatchSize && !flush() {
				complete = false
				return errStopped
			}
			return nil
		})
		if err == nil && !flush() {
			complete = false
		}
		if err != nil && !errors.Is(err, errStopped) {
			e.log.Error("reading the hit journal", "segment", path, "err", err)
			complete = false
		}
		if !complete {
			return // stopping: what is left is replayed at the next start
		}
		if torn {
			e.log.Info("the hit journal's segment ended in a record half written (never acknowledged)", "segment", path)
		}
		e.journal.replayed(path)
	}
}

var errStopped = errors.New("stopped")
