// Package event writes the organization's event log: the outbox every change
// that integrations hear about goes through, in the transaction of the change.
package event

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/ent"
	entevent "github.com/flytrap/flytrap/ent/event"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/sequence"
	"github.com/flytrap/flytrap/store/upgrade"
)

// APIVersion is the current version of the event and REST shapes, carried by every
// event and stated on every response; see docs/versioning.md.
const APIVersion = "2026-11-22"

// SupportedVersions are the versions a client may ask for with the Flytrap-Version header.
var SupportedVersions = []string{APIVersion}

// Event types.
const (
	ThreatDetected  = "threat.detected"
	ThreatEscalated = "threat.escalated"
	TrapCreated     = "trap.created"
	TrapUpdated     = "trap.updated"
	TrapDeleted     = "trap.deleted"
	// SessionTriaged says a person or a pipeline changed a session's triage state.
	SessionTriaged = "session.triaged"
	// WebhookEndpointDisabled says the service turned a webhook endpoint off (410 Gone, or failing for days).
	WebhookEndpointDisabled = "webhook.endpoint_disabled"
)

// Types lists every event type, for validating filters.
var Types = []string{ThreatDetected, ThreatEscalated, TrapCreated, TrapUpdated, TrapDeleted, WebhookEndpointDisabled, SessionTriaged}

// ErrNoTx is returned when an event would be written outside a transaction,
// where it could commit without its change or the change without it.
var ErrNoTx = errors.New("events must be written inside the transaction of their change")

const seqSequence = "events"

// Append writes an event of type typ for org inside tx. Its numbers come from counter rows
// that tx holds locked until it commits, so they become visible in order: a reader that
// has seen position n will never later find a new event below n. The global counter is
// taken first, then the organization's, always in that order, so writers cannot deadlock.
func Append(ctx context.Context, tx *ent.Tx, org, typ string, data map[string]any) (*ent.Event, error) {
	if tx == nil {
		return nil, ErrNoTx
	}
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	c := tx.Client()
	seq, err := next(ctx, c, seqSequence)
	if err != nil {
		return nil, err
	}
	pos, err := next(ctx, c, seqSequence+":"+org)
	if err != nil {
		return nil, err
	}
	at, err := eventTime(ctx, c, time.Now())
	if err != nil {
		return nil, err
	}
	ev, err := c.Event.Create().
		SetOrgID(org).
		SetPosition(pos).
		SetSeq(seq).
		SetType(typ).
		SetAPIVersion(APIVersion).
		SetCreatedAt(at).
		SetData(data).
		Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("write %s event: %w", typ, err)
	}
	return ev, nil
}

// clockCounter holds the time of the newest event, in Unix seconds.
const clockCounter = seqSequence + ":clock"

// eventTime is the created_at of the event being appended: now to the second, or the
// newest event's time when that is later (an instance whose clock is ahead wrote it), in
// one upsert of the clock counter. So event times never decrease along seq, hence along
// every organization's positions, and a day's events are a run of each organization's
// positions: retention can drop the partition of a day without leaving a hole in a log
// (docs/decisions.md, "Events partitioned by day"). The caller holds the global counter's
// row lock, which orders every appender's upsert. On PostgreSQL "now" is the database
// server's clock, one for every instance: an instance whose clock runs ahead would
// otherwise date every instance's events ahead with it until the real time caught up.
// A log from before the clock gets it from its newest event once (StartClock).
func eventTime(ctx context.Context, c *ent.Client, now time.Time) (time.Time, error) {
	q := `INSERT INTO sequences (id, value) VALUES (?, ?)
		ON CONFLICT (id) DO UPDATE SET value = max(sequences.value, excluded.value) RETURNING value`
	args := []any{clockCounter, now.Unix()}
	if c.Dialect() == dialect.Postgres {
		q = `INSERT INTO sequences (id, value) VALUES ($1, floor(extract(epoch FROM clock_timestamp()))::bigint)
			ON CONFLICT (id) DO UPDATE SET value = GREATEST(sequences.value, excluded.value) RETURNING value`
		args = args[:1]
	}
	rows, err := c.QueryContext(ctx, q, args...)
	if err != nil {
		return time.Time{}, fmt.Errorf("advance the event clock: %w", err)
	}
	defer rows.Close()
	var at int64
	for rows.Next() {
		if err := rows.Scan(&at); err != nil {
			return time.Time{}, fmt.Errorf("advance the event clock: %w", err)
		}
	}
	if err := rows.Err(); err != nil || at == 0 {
		return time.Time{}, fmt.Errorf("advance the event clock: %w", cmp.Or(err, errors.New("no value returned")))
	}
	return time.Unix(at, 0).UTC(), nil
}

// StartClock sets the event clock of a log stored before it to its newest event's time,
// once (upgrade.Once), so that the first event after the upgrade is not dated before it.
func StartClock(ctx context.Context, c *ent.Client) (bool, error) {
	return upgrade.Once(ctx, c, "event-clock-1", func(ctx context.Context, tx *ent.Tx) error {
		ctx = privacy.DecisionContext(ctx, privacy.Allow)
		newest, err := tx.Event.Query().Order(ent.Desc(entevent.FieldSeq)).First(ctx)
		if ent.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return tx.Sequence.Create().SetID(clockCounter).SetValue(newest.CreatedAt.Unix()).
			OnConflictColumns(sequence.FieldID).UpdateNewValues().Exec(ctx)
	})
}

// next increments counter name (creating it at 1) and returns its new value.
func next(ctx context.Context, c *ent.Client, name string) (int64, error) {
	err := c.Sequence.Create().SetID(name).SetValue(1).
		OnConflictColumns(sequence.FieldID).AddValue(1).
		Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("advance counter %s: %w", name, err)
	}
	s, err := c.Sequence.Get(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("read counter %s: %w", name, err)
	}
	return s.Value, nil
}
