package record

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/store/sqltext"
	"github.com/flytrap/flytrap/tally"
)

// Hit is one request to store: the request as the engine sees it (detect.Observation, the
// one struct the listener fills and detect.Observe reads), what the listener decided of
// it, and — set by the writer — its session and what detect made of it.
type Hit struct {
	detect.Observation
	ID, Org, Site string
	Status        int
	Truncated     bool // the body was cut to what the column keeps

	Session *Session       `json:"-"` // set by Session.Observed
	Outcome detect.Outcome `json:"-"` // set by Session.Observed

	row []any // the hit's row, all but its session and signals (see Prepare)
	err error // why ent's validators refuse the row, if they do
}

// Prepare makes h's row in the hits table, holding what ent would write: the headers as
// header lines (schematype.Headers), received_hour as ent's hitHour hook derives it,
// trap_id NULL without a trap. The listener calls it in the request's goroutine, sparing
// the single writer, which fills in the session and the signals. What ent's validators
// say of the row is kept: a hit they refuse fails in the writer, as it did when ent wrote
// hits. Call it again after changing h.
func (h *Hit) Prepare() {
	r := Row{ID: h.ID, Org: h.Org, Trap: h.TrapID, Method: Bound(h.Method, 16), Path: h.Path, Query: h.Query,
		Headers: schematype.Headers(h.Headers).String(), Body: h.Body, Truncated: h.Truncated, IP: h.IP.String(),
		UA: h.UA, At: h.At, Kind: h.Kind, Status: h.Status, JA4: h.JA4, H2: h.H2, HeaderOrder: h.HeaderOrder}
	h.row, h.err = r.values(), h.check(r.Method, r.IP)
}

// Err is why ent's validators refuse h's row (Prepare), or nil: a hit refused would fail
// its batch's write.
func (h *Hit) Err() error { return h.err }

// Row is a hit's row in the hits table, column by column, for a writer with no request to
// observe (the seed tool; the listener's hits make theirs in Hit.Prepare). Headers are as
// schematype.Headers stores them; Signals is the JSON list of the signals it fired (nil:
// none); Session and Trap "" are NULL.
type Row struct {
	ID, Org, Session, Trap             string
	Method, Path, Query, Headers, Body string
	Truncated                          bool
	IP, UA                             string
	At                                 time.Time
	Kind                               string
	Status                             int
	Signals                            []byte
	JA4, H2, HeaderOrder               string // the client's fingerprints; "": NULL
}

// values is r in hit.Columns' order, received_hour derived as ent's hitHour hook does.
func (r *Row) values() []any {
	row := make([]any, len(hit.Columns))
	row[colID], row[colOrg], row[colSession], row[colTrap] = r.ID, r.Org, nil, nil
	if r.Session != "" {
		row[colSession] = r.Session
	}
	if r.Trap != "" {
		row[colTrap] = r.Trap
	}
	row[colMethod], row[colPath], row[colQuery] = r.Method, r.Path, r.Query
	row[colHeaders], row[colBody], row[colTruncated] = r.Headers, r.Body, r.Truncated
	row[colIP], row[colUA], row[colAt], row[colHour] = r.IP, r.UA, r.At, r.At.Unix()/3600
	row[colKind], row[colStatus], row[colSignals] = r.Kind, r.Status, nil
	if r.Signals != nil {
		row[colSignals] = r.Signals
	}
	row[colJA4], row[colH2], row[colOrder] = nullable(r.JA4), nullable(r.H2), nullable(r.HeaderOrder)
	return row
}

// InsertRows inserts rows in tx, at most chunk to a statement (rounded down to a power of
// two, up to 1,024; 0: as the listener's writer), and counts each in its hour (the
// organization's and its trap's) and, with a JA4, in its JA4 campaign.
func (w *Writer) InsertRows(ctx context.Context, tx *ent.Tx, rows []Row, chunk int) error {
	if chunk <= 0 {
		chunk = hitChunk
	}
	chunk = 1 << (bits.Len(uint(min(chunk, 1024))) - 1) // 1,024 × 20 parameters: within SQLite's 32,766
	counts := tally.Pending(tx)
	values := make([][]any, len(rows))
	for i := range rows {
		r := &rows[i]
		if r.Signals == nil {
			r.Signals = noSignals
		}
		values[i] = r.values()
		counts.Hit(r.Org, r.Trap, r.At.Unix()/3600)
		if r.JA4 != "" && r.Session != "" {
			counts.Ja4Hit(r.Org, r.JA4, r.Session, "", r.ID, r.At, true)
		}
	}
	return w.insert(ctx, tx.Client(), values, chunk)
}

// Where each column sits in a hit's row: ent's generated column list (hit.Columns), so
// the INSERT names exactly the schema's columns. A column the schema gains and the row
// does not fill fails TestHitRowFillsEveryColumn.
var (
	colID        = hitColumn(hit.FieldID)
	colOrg       = hitColumn(hit.FieldOrgID)
	colSession   = hitColumn(hit.FieldSessionID)
	colTrap      = hitColumn(hit.FieldTrapID)
	colMethod    = hitColumn(hit.FieldMethod)
	colPath      = hitColumn(hit.FieldPath)
	colQuery     = hitColumn(hit.FieldQuery)
	colHeaders   = hitColumn(hit.FieldHeaders)
	colBody      = hitColumn(hit.FieldBody)
	colTruncated = hitColumn(hit.FieldBodyTruncated)
	colIP        = hitColumn(hit.FieldSourceIP)
	colUA        = hitColumn(hit.FieldUserAgent)
	colAt        = hitColumn(hit.FieldReceivedAt)
	colHour      = hitColumn(hit.FieldReceivedHour)
	colKind      = hitColumn(hit.FieldKind)
	colStatus    = hitColumn(hit.FieldStatus)
	colSignals   = hitColumn(hit.FieldSignals)
	colJA4       = hitColumn(hit.FieldJa4)
	colH2        = hitColumn(hit.FieldH2Fingerprint)
	colOrder     = hitColumn(hit.FieldHeaderOrder)
)

// nullable is s, or NULL for "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// hitColumn is where column name sits in hit.Columns; a name ent no longer generates
// stops the program at start.
func hitColumn(name string) int {
	i := slices.Index(hit.Columns, name)
	if i < 0 {
		panic("record: the hits table has no column " + name)
	}
	return i
}

// check runs ent's validators of the hit's fields.
func (h *Hit) check(method, ip string) error {
	for _, f := range []struct {
		name  string
		valid func(string) error
		value string
	}{
		{hit.FieldID, hit.IDValidator, h.ID},
		{hit.FieldOrgID, hit.OrgIDValidator, h.Org},
		{hit.FieldMethod, hit.MethodValidator, method},
		{hit.FieldPath, hit.PathValidator, h.Path},
		{hit.FieldQuery, hit.QueryValidator, h.Query},
		{hit.FieldBody, hit.BodyValidator, h.Body},
		{hit.FieldSourceIP, hit.SourceIPValidator, ip},
		{hit.FieldUserAgent, hit.UserAgentValidator, h.UA},
		{hit.FieldJa4, hit.Ja4Validator, h.JA4},
		{hit.FieldH2Fingerprint, hit.H2FingerprintValidator, h.H2},
		{hit.FieldHeaderOrder, hit.HeaderOrderValidator, h.HeaderOrder},
	} {
		if err := f.valid(f.value); err != nil {
			return fmt.Errorf("hit %s: %w", f.name, err)
		}
	}
	return hit.KindValidator(hit.Kind(h.Kind))
}

// complete fills in what only the writer knows of the row: the session, the signals fired.
func (h *Hit) complete() ([]any, error) {
	sigs := noSignals
	if len(h.Outcome.Firings) > 0 {
		names := make([]string, len(h.Outcome.Firings))
		for i, f := range h.Outcome.Firings {
			names[i] = f.Name
		}
		b, err := json.Marshal(names)
		if err != nil {
			return nil, fmt.Errorf("marshal hit signals: %w", err)
		}
		sigs = b
	}
	h.row[colSession], h.row[colSignals] = h.Session.ID, sigs
	return h.row, nil
}

// noSignals is the signals column of a hit that fired none, as ent encodes it. Rows share
// it: the drivers only read their arguments.
var noSignals = []byte("[]")

// hitChunk is the most rows one INSERT carries: 64 × 20 parameters stay far below
// SQLite's limit (32766) and PostgreSQL's (65535).
const hitChunk = 64

// insertHits inserts hit rows with multi-row INSERTs of hitChunk rows, the rest in
// chunks of powers of two (stmtChunks): seven statement texts in all, which the
// writer's transaction keeps prepared (store.Prepared) instead of parsing a new one for
// every batch size. It bypasses ent, whose per-row mutation objects and privacy checks
// cost the single writer more than the database's own work. That is sound for the
// recorder alone: it writes as the system, which the privacy policy allows anyway, and
// Prepare does what the one hit hook does (received_hour).
// TestHitRowsAsEntWritesThem holds the rows to ent's.
//
// On PostgreSQL the rows go with COPY instead (store.CopyIn), the whole batch in one stream:
// the server then parses no statement and binds no parameters, and the writer is what
// bounds the listener there (docs/benchmarks.md). The signals column (jsonb) is sent as
// text, as COPY takes it.
func (w *Writer) insertHits(ctx context.Context, c *ent.Client, rows [][]any) error {
	if !w.pg {
		return w.insert(ctx, c, rows, hitChunk)
	}
	for _, row := range rows {
		if b, ok := row[colSignals].([]byte); ok {
			row[colSignals] = signalsText(b)
		}
	}
	if err := store.CopyIn(ctx, c, hit.Table, hit.Columns, rows); err != nil {
		return fmt.Errorf("insert hits: %w", err)
	}
	return nil
}

// signalsText is a hit's signals column as text; the common "[]" without a copy.
func signalsText(b []byte) string {
	if string(b) == "[]" {
		return "[]"
	}
	return string(b)
}

// insert inserts hit rows, chunk (a power of two) to a statement, the rest as stmtChunks splits it.
func (w *Writer) insert(ctx context.Context, c *ent.Client, rows [][]any, chunk int) error {
	args := make([]any, 0, min(len(rows), chunk)*len(hit.Columns))
	for _, n := range stmtChunks(len(rows), chunk) {
		args = args[:0]
		for _, row := range rows[:n] {
			args = append(args, row...)
		}
		if _, err := c.ExecContext(ctx, w.hitInsert(n), args...); err != nil {
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
func (w *Writer) hitInsert(n int) string {
	if q, ok := w.hitInserts.Load(n); ok {
		return q.(string)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO " + hit.Table + " (" + strings.Join(hit.Columns, ", ") + ") VALUES ")
	sqltext.Values(&b, w.pg, n, sqltext.Columns(len(hit.Columns))...)
	q := b.String()
	w.hitInserts.Store(n, q)
	return q
}

// Bound makes attacker text storable on every database — valid UTF-8, no NUL
// (each replaced by U+FFFD) — and cuts it to at most n bytes on a rune boundary.
func Bound(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return clip.Bytes(s, n)
}
