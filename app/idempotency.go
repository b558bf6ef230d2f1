package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/idempotencykey"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/viewer"
)

// IdempotencyWindow is how long an Idempotency-Key is remembered, per organization.
const IdempotencyWindow = 24 * time.Hour

// MaxIdempotencyKeys bounds the keys one organization holds within IdempotencyWindow: a
// write key looping create and delete could otherwise keep millions of rows (each up to the
// size of a trap's answer); past it a keyed create is a 429 until keys expire (a create
// without a key still works). A variable for tests.
var MaxIdempotencyKeys = 10000

// maxIdempotencyKey bounds an Idempotency-Key, as Stripe's does.
const maxIdempotencyKey = 255

// CheckIdempotencyKey is an error unless key may be an Idempotency-Key: 1 to 255 printable
// ASCII characters.
func CheckIdempotencyKey(key string) error {
	if key == "" || len(key) > maxIdempotencyKey {
		return apperr.Invalid("Idempotency-Key", "must be 1 to %d characters", maxIdempotencyKey)
	}
	for _, r := range key {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return apperr.Invalid("Idempotency-Key", "must be printable ASCII")
		}
	}
	return nil
}

// CreateTrapOnce is CreateTrap under an Idempotency-Key, in the caller's transaction
// (InTx). The first request with key creates the trap and keeps render's answer; a
// request with the same key and the same request (req, hashed as JSON) within
// IdempotencyWindow gets that answer again (replayed true) and creates nothing; the same
// key with another request is a 409 that says so. A create that fails keeps nothing, so
// it can be retried with its key. Two requests with one key at once: the second is a 409.
func (a *App) CreateTrapOnce(ctx context.Context, key string, req any, in TrapInput,
	render func(*ent.Trap) ([]byte, error)) (body []byte, replayed bool, err error) {
	if err := CheckIdempotencyKey(key); err != nil {
		return nil, false, err
	}
	v, ok := viewer.FromContext(ctx)
	if !ok {
		return nil, false, apperr.New(apperr.KindUnauthenticated, "unauthenticated")
	}
	// The create's own policy asks for read-write; a replay must too, before it answers or
	// deletes anything (a read-only key sending a known key and body got the trap and a 201).
	if !v.Scope.Includes(viewer.ReadWrite) {
		return nil, false, apperr.New(apperr.KindForbidden, "this needs the "+viewer.ReadWrite.Human()+" scope")
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, false, fmt.Errorf("hash the request: %w", err)
	}
	sum := sha256.Sum256(raw)
	hash := hex.EncodeToString(sum[:])
	sys := privacy.DecisionContext(ctx, privacy.Allow)
	c := a.ent(ctx)
	cut := time.Now().UTC().Add(-IdempotencyWindow)
	// Forget the organization's expired keys (the (org_id, created_at) index).
	if _, err := c.IdempotencyKey.Delete().Where(idempotencykey.OrgID(v.OrgID), idempotencykey.CreatedAtLT(cut)).Exec(sys); err != nil {
		return nil, false, fmt.Errorf("forget expired idempotency keys: %w", err)
	}
	prev, err := c.IdempotencyKey.Query().Where(idempotencykey.OrgID(v.OrgID), idempotencykey.Key(key)).Only(sys)
	switch {
	case err == nil && prev.RequestHash == hash:
		return prev.Response, true, nil
	case err == nil:
		return nil, false, apperr.Conflict("Idempotency-Key: this key was used with a different request at %s; "+
			"use a new key for a new request (keys are kept %s)", prev.CreatedAt.UTC().Format(time.RFC3339), IdempotencyWindow)
	case !ent.IsNotFound(err):
		return nil, false, fmt.Errorf("read the idempotency key: %w", err)
	}
	// The (org_id, created_at) index counts at most MaxIdempotencyKeys rows.
	held, err := c.IdempotencyKey.Query().Where(idempotencykey.OrgID(v.OrgID)).Limit(MaxIdempotencyKeys).Count(sys)
	if err != nil {
		return nil, false, fmt.Errorf("count the idempotency keys: %w", err)
	}
	if held >= MaxIdempotencyKeys {
		return nil, false, apperr.TooManyFor(time.Hour, "Idempotency-Key: the organization holds %d keys of the last %s; "+
			"retry later or create without a key", MaxIdempotencyKeys, IdempotencyWindow)
	}
	t, err := a.CreateTrap(ctx, in)
	if err != nil {
		return nil, false, err
	}
	if body, err = render(t); err != nil {
		return nil, false, err
	}
	err = c.IdempotencyKey.Create().SetOrgID(v.OrgID).SetKey(key).SetRequestHash(hash).
		SetResponse(body).SetStatus(201).Exec(sys)
	if ent.IsConstraintError(err) {
		return nil, false, apperr.Conflict("Idempotency-Key: another request with this key is in progress; retry it")
	}
	if err != nil {
		return nil, false, fmt.Errorf("keep the idempotency key: %w", err)
	}
	return body, false, nil
}
