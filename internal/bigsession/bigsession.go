// Package bigsession writes a great many hits, signals and prompts of one session straight
// into a database, each kind with one INSERT … SELECT over a generated series: a session a
// visitor would take hours to grow, made in seconds (flytrap-seed -giant, and the tests of
// the detail of a giant session). The session row is the caller's, as are the counters:
// nothing here runs ent's hooks.
package bigsession

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"entgo.io/ent/dialect"
)

// Spec is what to write.
type Spec struct {
	Org, Session string
	Trap         string // the hits' trap; "" for none (404s)
	// Tag makes the rows' ids unique to this call: 8 lower-case base32 characters.
	Tag                 string
	Hits                int
	First, Last         time.Time // the hits are spread evenly from First to Last
	SourceIP, UserAgent string
	// Signals are firings of SignalNames, in turn, one on every Hits/Signals-th hit (no
	// placement, no source hit); Prompts likewise, of PromptTexts. SignalCounts says how
	// many of each name that makes, for the session's State.Signals.
	// Tag's first character is 0–7, as a ULID's.
	Signals     int
	SignalNames []string
	Prompts     int
	PromptTexts []Prompt
}

// Prompt is a captured prompt's text and hash.
type Prompt struct{ Text, Hash string }

// SignalCounts is how many firings of each of s.SignalNames Insert writes.
func (s Spec) SignalCounts() map[string]int {
	out := map[string]int{}
	n := min(s.Signals, s.Hits)
	for i, name := range s.SignalNames {
		out[name] += n / len(s.SignalNames)
		if i < n%len(s.SignalNames) {
			out[name]++
		}
	}
	return out
}

// Execer is a database or a transaction (*sql.DB, *sql.Tx, *ent.Tx).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Insert writes s's hits, signals and prompts on a database of dialect d.
func Insert(ctx context.Context, db Execer, d string, s Spec) error {
	if s.Hits < 1 || len(s.Tag) != 8 || s.Tag[0] < '0' || s.Tag[0] > '7' || s.Last.Before(s.First) ||
		(s.Signals > 0 && len(s.SignalNames) == 0) || (s.Prompts > 0 && len(s.PromptTexts) == 0) {
		return fmt.Errorf("bigsession: a bad spec (hits %d, tag %q, signals %d of %d names, prompts %d of %d texts)",
			s.Hits, s.Tag, s.Signals, len(s.SignalNames), s.Prompts, len(s.PromptTexts))
	}
	pg := d == dialect.Postgres
	step := float64(0)
	if s.Hits > 1 {
		step = float64(s.Last.Sub(s.First).Microseconds()) / float64(s.Hits-1) // µs between hits
	}
	first := float64(s.First.UnixMicro())
	headers := "Accept: */*\nUser-Agent: " + s.UserAgent + "\n"
	var trapID any
	if s.Trap != "" {
		trapID = s.Trap
	}
	kind := "decoy"
	if s.Trap == "" {
		kind = "not_found"
	}
	// Every statement names its parameters $1…; SQLite takes them as ?NNN.
	q := func(pgSQL, liteSQL string) string {
		if pg {
			return pgSQL
		}
		return liteSQL
	}
	// The n-th row's id and time (µs since the epoch) in each dialect.
	hitID := func(n string) string {
		return q("'hit_' || $1 || lpad(to_hex("+n+"), 18, '0')", "'hit_' || ?1 || printf('%018x', "+n+")")
	}
	at := func(n string) string { return q("($2::float8 + "+n+" * $3::float8)", "(?2 + "+n+" * ?3)") }
	ts := func(us string) string {
		return q("to_timestamp("+us+" / 1e6)", "strftime('%Y-%m-%d %H:%M:%f', "+us+" / 1e6, 'unixepoch') || ' +0000 UTC'")
	}
	series := func(count string) (with, from string) {
		if pg {
			return "", " FROM generate_series(0, " + count + " - 1) AS g(n)"
		}
		return "WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n + 1 < " + count + ") ", " FROM g"
	}
	lite := func(stmt string) string {
		if pg {
			return stmt
		}
		return strings.NewReplacer("$10", "?10", "$11", "?11", "$12", "?12", "$1", "?1", "$2", "?2", "$3", "?3", "$4", "?4",
			"$5", "?5", "$6", "?6", "$7", "?7", "$8", "?8", "$9", "?9").Replace(stmt)
	}
	with, from := series("$4")
	hits := with + `INSERT INTO hits (id, org_id, session_id, trap_id, method, path, query, headers, body, body_truncated,
		source_ip, user_agent, received_at, received_hour, kind, status, signals)
		SELECT ` + hitID("n") + `, $5, $6, $7, 'GET', '/', '', $8, '', ` + q("false", "0") + `, $9, $10, ` + ts(at("n")) + `,
		` + q("floor("+at("n")+" / 3600e6)::bigint", "CAST("+at("n")+" / 3600e6 AS INTEGER)") + `, $11, 200, ` + q("'[]'::jsonb", "'[]'") + from
	if _, err := db.ExecContext(ctx, lite(hits), s.Tag, first, step, s.Hits, s.Org, s.Session, trapID, headers, s.SourceIP, s.UserAgent, kind); err != nil {
		return fmt.Errorf("bigsession: insert hits: %w", err)
	}
	pick := func(list, i string) string {
		return q("("+list+"::jsonb ->> ("+i+")::int)", "json_extract("+list+", '$[' || ("+i+") || ']')")
	}
	if s.Signals > 0 {
		names, _ := json.Marshal(s.SignalNames)
		every := max(1, s.Hits/s.Signals)
		with, from := series("$4")
		sig := with + `INSERT INTO signals (id, org_id, session_id, hit_id, name, tripwire, placement, source_hit_id, delay_ms, detail, created_at)
			SELECT ` + strings.Replace(hitID("n"), "'hit_'", "'sig_'", 1) + `, $5, $6, ` + hitID("n * $7") + `,
			` + pick("$8", "n % $9") + `, ` + q("false", "0") + `, '', '', n % 5000, 'detail ' || (n % 7), ` + ts(at("n * $7")) + from
		if _, err := db.ExecContext(ctx, lite(sig), s.Tag, first, step, min(s.Signals, s.Hits), s.Org, s.Session, every, string(names), len(s.SignalNames)); err != nil {
			return fmt.Errorf("bigsession: insert signals: %w", err)
		}
	}
	if s.Prompts > 0 {
		texts, hashes := make([]string, len(s.PromptTexts)), make([]string, len(s.PromptTexts))
		for i, p := range s.PromptTexts {
			texts[i], hashes[i] = p.Text, p.Hash
		}
		t, _ := json.Marshal(texts)
		h, _ := json.Marshal(hashes)
		every := max(1, s.Hits/s.Prompts)
		with, from := series("$4")
		pr := with + `INSERT INTO prompts (id, org_id, session_id, hit_id, text, hash, model, operator, source, created_at)
			SELECT ` + strings.Replace(hitID("n"), "'hit_'", "'prm_'", 1) + `, $5, $6, ` + hitID("n * $7") + `,
			` + pick("$8", "n % $10") + `, ` + pick("$9", "n % $10") + `, '', '', 'body', ` + ts(at("n * $7")) + from
		if _, err := db.ExecContext(ctx, lite(pr), s.Tag, first, step, min(s.Prompts, s.Hits), s.Org, s.Session, every, string(t), string(h), len(texts)); err != nil {
			return fmt.Errorf("bigsession: insert prompts: %w", err)
		}
	}
	return nil
}
