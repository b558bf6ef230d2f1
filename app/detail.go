package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/prompt"
	"github.com/flytrap/flytrap/ent/signal"
	"github.com/flytrap/flytrap/ids"
)

// DefaultDetailLimit bounds each list of a session's detail (hits, signals, prompts): the
// newest 100, so a detail costs the same few milliseconds whatever the session's size (1,000
// rows a list took 36–49 ms on PostgreSQL at 1M sessions; docs/benchmarks.md). Older hits are
// paged through Session.hits (the dashboard's "Show older hits"); --session-detail-limit
// raises it to MaxDetailLimit.
const DefaultDetailLimit = 100

// detailSlack widens a session's span when its hits are read: the writer sets first and last
// seen from its hits' received_at, in the order it writes them, which may differ from the
// order they were received by the time a request's body took to read (seconds).
const detailSlack = 24 * time.Hour

// MaxDetailLimit is the largest DetailLimit: sessionDetail's @cost assumes it.
const MaxDetailLimit = 1000

// A session detail's byte budget: each of its lists holds its newest items whose stored text
// fits DetailBytes (and whose JSON does, once read). A visitor fills the hits and prompts, so
// the count limit alone let one detail carry 16 MB (1,000 hits of 16 KiB bodies).
const (
	DefaultDetailBytes = 1 << 20
	MinDetailBytes     = 64 << 10
	MaxDetailBytes     = 8 << 20
)

// Largest stored text of one item of each list, for pricing the lists by DetailBytes.
const (
	maxHitText    = 16<<10 + 8<<10 + 4096 + 2048 + 1024 // body, headers, query, path, user agent
	maxPromptText = 32 << 10
	maxSignalText = 2048 + 64 + 32 + 2*40 // detail, name, placement, hit ids
	// itemOverhead is what an item's other fields take in a response, besides its text.
	itemOverhead = 256
)

// DetailListSizes are the most items of each list of a session's detail that bytes can hold,
// each at its largest: the complexity limit prices the lists at that many items, which makes
// a detail cost what it can return ("Type.field" keys).
func DetailListSizes(bytes int) map[string]int {
	return map[string]int{
		"SessionDetail.hits":    max(1, bytes/(maxHitText+itemOverhead)),
		"SessionDetail.prompts": max(1, bytes/(maxPromptText+itemOverhead)),
		"SessionDetail.signals": max(1, bytes/(maxSignalText+itemOverhead)),
	}
}

// SessionDetail is a session and its evidence; each list is the newest items within the
// limits (count and bytes), oldest first (by time, then id).
type SessionDetail struct {
	Session          *ent.Session  `json:"session"`
	Hits             []*ent.Hit    `json:"hits"`
	HitsTruncated    bool          `json:"hitsTruncated"`
	Signals          []*ent.Signal `json:"signals"`
	SignalsTruncated bool          `json:"signalsTruncated"`
	Prompts          []*ent.Prompt `json:"prompts"`
	PromptsTruncated bool          `json:"promptsTruncated"`
}

// SessionDetail is one session with its evidence, the one definition both the GraphQL
// sessionDetail query and REST's GET /dashboard/api/sessions/{id} serve: each list holds
// the newest DetailLimit items that fit DetailBytes, oldest first, ties broken by id. An id
// of another kind of object is a missing session, as REST has always answered.
func (a *App) SessionDetail(ctx context.Context, id string) (*SessionDetail, error) {
	if err := CheckSiteScope(ctx, "read sessions"); err != nil {
		return nil, err
	}
	s, err := a.detailSession(ctx, id)
	if err != nil {
		return nil, err
	}
	limit := a.DetailLimit
	if limit < 1 || limit > MaxDetailLimit {
		limit = DefaultDetailLimit
	}
	budget := a.DetailBytes
	if budget < MinDetailBytes || budget > MaxDetailBytes {
		budget = DefaultDetailBytes
	}
	// A session's hits were received between its first and last seen (the hit writer sets both
	// from them): naming that span, widened by detailSlack, lets PostgreSQL search only the
	// days' partitions it covers when hits is partitioned by day (docs/operations.md).
	span := func() *ent.HitQuery {
		hq := s.QueryHits()
		if !s.FirstSeen.IsZero() && !s.LastSeen.Before(s.FirstSeen) {
			hq = hq.Where(hit.ReceivedAtGTE(s.FirstSeen.Add(-detailSlack)), hit.ReceivedAtLTE(s.LastSeen.Add(detailSlack)))
		}
		return hq
	}
	hitOrder := []hit.OrderOption{ent.Desc(hit.FieldReceivedAt), ent.Desc(hit.FieldID)}
	var sizes []storedSize
	err = span().Order(hitOrder...).Limit(limit+1).
		Modify(selectSize(hit.FieldBody, hit.FieldHeaders, hit.FieldQuery, hit.FieldPath, hit.FieldUserAgent)).Scan(ctx, &sizes)
	if err != nil {
		return nil, err
	}
	// The rows that fit are the newest len(keep): read again in the same order and limit, by
	// the index the sizes walked. (By their ids, an IN list of up to 1,000, PostgreSQL took
	// 14 s on a session of a million hits under ingest.) Rows that arrived in between shift
	// the window; newestWithin measures what was read, so the budget holds whatever it holds.
	keep, hitsCut := fitting(sizes, limit, budget)
	hits, err := span().Order(hitOrder...).Limit(max(1, len(keep))).All(ctx)
	if err != nil {
		return nil, err
	}
	hits, cut := newestWithin(hits, budget, hitJSONSize)
	hitsCut = hitsCut || cut

	sigOrder := []signal.OrderOption{ent.Desc(signal.FieldCreatedAt), ent.Desc(signal.FieldID)}
	sizes = sizes[:0]
	err = s.QuerySignals().Order(sigOrder...).Limit(limit+1).
		Modify(selectSize(signal.FieldDetail, signal.FieldName, signal.FieldPlacement)).Scan(ctx, &sizes)
	if err != nil {
		return nil, err
	}
	keep, signalsCut := fitting(sizes, limit, budget)
	signals, err := s.QuerySignals().Order(sigOrder...).Limit(max(1, len(keep))).All(ctx)
	if err != nil {
		return nil, err
	}
	signals, cut = newestWithin(signals, budget, signalJSONSize)
	signalsCut = signalsCut || cut

	promptOrder := []prompt.OrderOption{ent.Desc(prompt.FieldCreatedAt), ent.Desc(prompt.FieldID)}
	sizes = sizes[:0]
	err = s.QueryPrompts().Order(promptOrder...).Limit(limit+1).
		Modify(selectSize(prompt.FieldText, prompt.FieldModel, prompt.FieldOperator)).Scan(ctx, &sizes)
	if err != nil {
		return nil, err
	}
	keep, promptsCut := fitting(sizes, limit, budget)
	prompts, err := s.QueryPrompts().Order(promptOrder...).Limit(max(1, len(keep))).All(ctx)
	if err != nil {
		return nil, err
	}
	prompts, cut = newestWithin(prompts, budget, promptJSONSize)
	promptsCut = promptsCut || cut

	// Read newest first to keep the newest; shown oldest first.
	slices.Reverse(hits)
	slices.Reverse(signals)
	slices.Reverse(prompts)
	return &SessionDetail{Session: s, Hits: hits, HitsTruncated: hitsCut, Signals: signals, SignalsTruncated: signalsCut,
		Prompts: prompts, PromptsTruncated: promptsCut}, nil
}

// storedSize is an item's id and the stored bytes of its text columns.
type storedSize struct {
	ID   string `json:"id"`
	Size int64  `json:"size"`
}

// selectSize selects a row's id and the stored bytes of cols (octet_length: SQLite 3.43+ and
// PostgreSQL read it without reading the text).
func selectSize(cols ...string) func(*entsql.Selector) {
	return func(q *entsql.Selector) {
		terms := make([]string, len(cols))
		for i, c := range cols {
			terms[i] = "COALESCE(octet_length(" + q.C(c) + "), 0)"
		}
		q.Select(q.C("id"), entsql.As(strings.Join(terms, " + "), "size"))
	}
}

// fitting is the ids of the newest rows (sizes, newest first) within limit and budget, and
// whether any was left out. The newest row is always kept.
func fitting(sizes []storedSize, limit, budget int) ([]string, bool) {
	ids := make([]string, 0, min(len(sizes), limit))
	used := 0
	for i, s := range sizes {
		used += int(s.Size) + itemOverhead
		if i == limit || i > 0 && used > budget {
			return ids, true
		}
		ids = append(ids, s.ID)
	}
	return ids, false
}

// newestWithin keeps the newest items (newest first) whose JSON fits budget, the newest always.
func newestWithin[T any](items []T, budget int, size func(T) int) ([]T, bool) {
	used := 0
	for i, it := range items {
		if used += size(it); i > 0 && used > budget {
			return items[:i], true
		}
	}
	return items, false
}

func hitJSONSize(h *ent.Hit) int {
	n := itemOverhead + jsonLen(h.Body) + jsonLen(h.Query) + jsonLen(h.Path) + jsonLen(h.UserAgent)
	for k, vs := range h.Headers {
		n += jsonLen(k) + 4
		for _, v := range vs {
			n += jsonLen(v) + 1
		}
	}
	return n
}

func signalJSONSize(s *ent.Signal) int {
	return itemOverhead + jsonLen(s.Detail) + jsonLen(s.Name) + jsonLen(s.Placement)
}

func promptJSONSize(p *ent.Prompt) int {
	return itemOverhead + jsonLen(p.Text) + jsonLen(p.Model) + jsonLen(p.Operator)
}

// jsonLen is the length of s as a JSON string, quotes and the escapes of control
// characters, quotes, backslashes and HTML's <, > and & included.
func jsonLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 5
		}
	}
	return n
}

// detailSession is the session a detail names. A session id is read without collecting the
// GraphQL fields: Node would take the detail's own hits, signals and prompts selections for
// the session's edges and load every one of them (100,000 signals of a giant session, 250 ms,
// issue 22). Any other id goes through Node, which says what it is.
func (a *App) detailSession(ctx context.Context, id string) (*ent.Session, error) {
	if ids.Prefix(id) == ids.Session {
		return a.ent(ctx).Session.Get(ctx, id)
	}
	n, err := a.Node(ctx, id)
	if err != nil {
		return nil, err
	}
	s, isSession := n.(*ent.Session)
	if !isSession {
		return nil, apperr.NotFound("session")
	}
	return s, nil
}

// SessionSignature is what a session's signed requests proved (Web Bot Auth) in words: the
// newest firing of the signature signal that decides (invalid or replayed over verified
// over unverifiable); nil when the session sent no signature (no query then: its tally
// says so). GraphQL's Session.signature and REST's session detail serve it.
func (a *App) SessionSignature(ctx context.Context, s *ent.Session) (*string, error) {
	n := s.State.Signals
	var name string
	switch {
	case n[detect.SignalSignatureInvalid] > 0:
		name = detect.SignalSignatureInvalid
	case n[detect.SignalSignedAgentVerified] > 0:
		name = detect.SignalSignedAgentVerified
	case n[detect.SignalSignatureUnverifiable] > 0:
		name = detect.SignalSignatureUnverifiable
	default:
		return nil, nil
	}
	sg, err := a.ent(ctx).Signal.Query().Where(signal.SessionID(s.ID), signal.Name(name)).
		Order(ent.Desc(signal.FieldCreatedAt), ent.Desc(signal.FieldID)).First(ctx)
	if ent.IsNotFound(err) {
		return nil, nil // purged by retention
	}
	if err != nil {
		return nil, fmt.Errorf("session signature: %w", err)
	}
	return &sg.Detail, nil
}
