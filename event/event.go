// Package event writes the organization's event log: the outbox every change
// that integrations hear about goes through, in the transaction of the change.
package event

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/sequence"
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
)

// Types lists every event type, for validating filters.
var Types = []string{ThreatDetected, ThreatEscalated, TrapCreated, TrapUpdated, TrapDeleted}

// ErrNoTx is returned when an event would be written outside a transaction,
// where it could commit without its change or the change without it.
var ErrNoTx = errors.New("events must be written inside the transaction of their change")

const positionSequence = "events"

// Append writes an event of type typ for org inside tx. Its position is taken from a
// counter row that tx holds locked until it commits, so positions become visible in
// order: a reader that has seen position n will never later find a new event below n.
func Append(ctx context.Context, tx *ent.Tx, org, typ string, data map[string]any) (*ent.Event, error) {
	if tx == nil {
		return nil, ErrNoTx
	}
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	c := tx.Client()
	err := c.Sequence.Create().SetID(positionSequence).SetValue(1).
		OnConflictColumns(sequence.FieldID).AddValue(1).
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("advance event position: %w", err)
	}
	seq, err := c.Sequence.Get(ctx, positionSequence)
	if err != nil {
		return nil, fmt.Errorf("read event position: %w", err)
	}
	ev, err := c.Event.Create().
		SetOrgID(org).
		SetPosition(seq.Value).
		SetType(typ).
		SetAPIVersion(APIVersion).
		SetCreatedAt(time.Now().UTC().Truncate(time.Second)).
		SetData(data).
		Save(ctx)
	if err != nil {
		return nil, fmt.Errorf("write %s event: %w", typ, err)
	}
	return ev, nil
}
