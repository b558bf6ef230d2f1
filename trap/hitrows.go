package trap

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"entgo.io/ent/dialect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/store/sqltext"
)

// hitColumns are the columns of a hit's row (see hitRow), in its order.
var hitColumns = []string{
	hit.FieldID, hit.FieldOrgID, hit.FieldSessionID, hit.FieldTrapID, hit.FieldMethod, hit.FieldPath,
	hit.FieldQuery, hit.FieldHeaders, hit.FieldBody, hit.FieldBodyTruncated, hit.FieldSourceIP,
	hit.FieldUserAgent, hit.FieldReceivedAt, hit.FieldReceivedHour, hit.FieldKind, hit.FieldStatus, hit.FieldSignals,
}

// Where in a hit's row the writer puts what only it knows.
const (
	hitColSession = 2
	hitColSignals = 16
)

// hitRow is rec's row in the hits table, in hitColumns order, holding what ent would
// write: the headers as header lines (schematype.Headers), received_hour as the
// hitHour hook (ent/schema/hooks.go) derives it, trap_id NULL without a trap. The
// listener makes it in the request's goroutine, sparing the single writer, which fills
// in the session and the signals. The error is what ent's validators say of the row: a
// hit they refuse fails in the writer, as it did when ent wrote hits.
func hitRow(rec *hitRecord) ([]any, error) {
	headers := schematype.Headers(rec.headers).String()
	method, ip := bound(rec.method, 16), rec.ip.String()
	var trapID any
	if rec.trap != nil {
		trapID = rec.trap.ID
	}
	row := []any{rec.id, rec.org, nil, trapID, method, rec.path, rec.query, headers, rec.body, rec.truncated,
		ip, rec.ua, rec.receivedAt, rec.receivedAt.Unix() / 3600, rec.kind, rec.status, nil}
	return row, checkHit(rec, method, ip)
}

// checkHit runs ent's validators of the hit's fields.
func checkHit(rec *hitRecord, method, ip string) error {
	for _, f := range []struct {
		name  string
		valid func(string) error
		value string
	}{
		{hit.FieldID, hit.IDValidator, rec.id},
		{hit.FieldOrgID, hit.OrgIDValidator, rec.org},
		{hit.FieldMethod, hit.MethodValidator, method},
		{hit.FieldPath, hit.PathValidator, rec.path},
		{hit.FieldQuery, hit.QueryValidator, rec.query},
		{hit.FieldBody, hit.BodyValidator, rec.body},
		{hit.FieldSourceIP, hit.SourceIPValidator, ip},
		{hit.FieldUserAgent, hit.UserAgentValidator, rec.ua},
	} {
		if err := f.valid(f.value); err != nil {
			return fmt.Errorf("hit %s: %w", f.name, err)
		}
	}
	return hit.KindValidator(hit.Kind(rec.kind))
}

// noSignals is the signals column of a hit that fired none, as ent encodes it. Rows share
// it: the drivers only read their arguments.
var noSignals = []byte("[]")

// signalsJSON is a hit's signals column.
func signalsJSON(names []string) ([]byte, error) {
	if len(names) == 0 {
		return noSignals, nil
	}
	b, err := json.Marshal(names)
	if err != nil {
		return nil, fmt.Errorf("marshal hit signals: %w", err)
	}
	return b, nil
}

// hitChunk is the most rows one INSERT carries: 64 × 17 parameters stay far below
// SQLite's limit (32766) and PostgreSQL's (65535).
const hitChunk = 64

// insertHits inserts hit rows with multi-row INSERTs of hitChunk rows, the rest in
// chunks of powers of two (stmtChunks): seven statement texts in all, which the
// writer's transaction keeps prepared (store.Prepared) instead of parsing a new one for
// every batch size. It bypasses ent, whose per-row mutation objects, hooks and privacy
// checks cost the single writer more than the database's own work. That is sound for
// the recorder alone: it writes as the system, which the privacy policy allows anyway,
// and hitRow does what the one hit hook does (received_hour).
// TestHitRowsAsEntWritesThem holds the rows to ent's.
func (e *Engine) insertHits(ctx context.Context, c *ent.Client, rows [][]any) error {
	args := make([]any, 0, min(len(rows), hitChunk)*len(hitColumns))
	for _, n := range stmtChunks(len(rows), hitChunk) {
		args = args[:0]
		for _, row := range rows[:n] {
			args = append(args, row...)
		}
		if _, err := c.ExecContext(ctx, e.hitInsert(n), args...); err != nil {
			return fmt.Errorf("insert hits: %w", err)
		}
		rows = rows[n:]
	}
	return nil
}

// stmtChunks splits n rows into statements of max rows, then of the powers of two in
// what is left (100 with max 64: 64, 32, 4), so a multi-row statement comes in few texts.
func stmtChunks(n, max int) []int {
	var out []int
	for ; n >= max; n -= max {
		out = append(out, max)
	}
	for size := max / 2; n > 0; size /= 2 {
		if n >= size {
			out = append(out, size)
			n -= size
		}
	}
	return out
}

// hitInsert is the INSERT statement of n hit rows, made once per n.
func (e *Engine) hitInsert(n int) string {
	if q, ok := e.hitInserts.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + hit.Table + " (" + strings.Join(hitColumns, ", ") + ") VALUES ")
	sqltext.Values(&b, e.dialect == dialect.Postgres, n, sqltext.Columns(len(hitColumns))...)
	q := b.String()
	e.hitInserts.Store(n, q)
	return q
}
