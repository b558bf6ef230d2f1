package crawler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flytrap/flytrap/ent/privacy"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/crawlerrangelist"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/webhook"
)

// Source is one operator's published list of its crawler's addresses.
type Source struct {
	Name     string   // the list's key (the metrics' label, --crawler-ranges-url's LIST)
	Operator string   // who publishes it
	Agents   []string // the Agent.Name values it vouches for
	URL      string   // where the operator publishes it
}

// Sources are the lists refreshed, all in the operators' shared format: {"creationTime":
// "…", "prefixes": [{"ipv4Prefix": "…"}, {"ipv6Prefix": "…"}]}. docs/operations.md shows
// the same table; detect/data/SOURCE.md the embedded snapshot of the first lists.
var Sources = []Source{
	{"googlebot", "Google", []string{"Googlebot", "Storebot-Google", "Google-InspectionTool", "GoogleOther"}, "https://developers.google.com/static/crawling/ipranges/common-crawlers.json"},
	{"google-special-crawlers", "Google", []string{"AdsBot-Google", "Mediapartners-Google", "APIs-Google"}, "https://developers.google.com/static/crawling/ipranges/special-crawlers.json"},
	{"bingbot", "Microsoft", []string{"bingbot", "BingPreview", "msnbot", "AdIdxBot"}, "https://www.bing.com/toolbox/bingbot.json"},
	{"applebot", "Apple", []string{"Applebot"}, "https://search.developer.apple.com/applebot.json"},
	{"gptbot", "OpenAI", []string{"GPTBot"}, "https://openai.com/gptbot.json"},
	{"oai-searchbot", "OpenAI", []string{"OAI-SearchBot"}, "https://openai.com/searchbot.json"},
	{"chatgpt-user", "OpenAI", []string{"ChatGPT-User"}, "https://openai.com/chatgpt-user.json"},
	{"perplexitybot", "Perplexity", []string{"PerplexityBot"}, "https://www.perplexity.com/perplexitybot.json"},
	{"perplexity-user", "Perplexity", []string{"Perplexity-User"}, "https://www.perplexity.com/perplexity-user.json"},
}

// SourceNames are the lists' names.
func SourceNames() []string {
	var out []string
	for _, s := range Sources {
		out = append(out, s.Name)
	}
	return out
}

// SourceByName is the list called name, nil when none is.
func SourceByName(name string) *Source {
	for i := range Sources {
		if Sources[i].Name == name {
			return &Sources[i]
		}
	}
	return nil
}

// maxPrefixes bounds one document: Google's largest list holds a few hundred.
const maxPrefixes = 20000

// ParseList reads an operator's document strictly: the shared shape and nothing else,
// every prefix valid, at least one, at most maxPrefixes, and a creationTime if present
// that parses.
func ParseList(data []byte) ([]netip.Prefix, time.Time, error) {
	var doc struct {
		CreationTime string `json:"creationTime"`
		SyncToken    string `json:"syncToken"`
		Prefixes     []struct {
			IPv4 string `json:"ipv4Prefix"`
			IPv6 string `json:"ipv6Prefix"`
		} `json:"prefixes"`
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, time.Time{}, fmt.Errorf("not a published range list: %w", err)
	}
	if dec.More() {
		return nil, time.Time{}, errors.New("not a published range list: data after the document")
	}
	var at time.Time
	if doc.CreationTime != "" {
		t, err := time.Parse("2006-01-02T15:04:05.999999", doc.CreationTime)
		if err != nil {
			if t, err = time.Parse(time.RFC3339Nano, doc.CreationTime); err != nil {
				return nil, time.Time{}, fmt.Errorf("creationTime %q: %w", clip.Bytes(doc.CreationTime, 64), err)
			}
		}
		at = t.UTC()
	}
	if len(doc.Prefixes) == 0 || len(doc.Prefixes) > maxPrefixes {
		return nil, time.Time{}, fmt.Errorf("%d prefixes (want 1 to %d)", len(doc.Prefixes), maxPrefixes)
	}
	out := make([]netip.Prefix, 0, len(doc.Prefixes))
	for _, p := range doc.Prefixes {
		s, want6 := p.IPv4, false
		if s == "" {
			s, want6 = p.IPv6, true
		} else if p.IPv6 != "" {
			return nil, time.Time{}, errors.New("a prefix with both ipv4Prefix and ipv6Prefix")
		}
		pf, err := netip.ParsePrefix(s)
		if err != nil || pf.Addr().Is6() != want6 {
			return nil, time.Time{}, fmt.Errorf("prefix %q is not a valid %s prefix", clip.Bytes(s, 64), map[bool]string{false: "IPv4", true: "IPv6"}[want6])
		}
		out = append(out, pf.Masked())
	}
	return out, at, nil
}

// ListStatus is one list's state, for /metrics and `flytrap admin stats`.
type ListStatus struct {
	Name      string    `json:"name"`
	Operator  string    `json:"operator"`
	URL       string    `json:"url"`
	Source    string    `json:"source"`     // embedded, stored (a fetch of an earlier run), fetched
	AsOf      time.Time `json:"as_of"`      // the list's own date (creationTime), or the snapshot's
	FetchedAt time.Time `json:"fetched_at"` // the last good fetch; zero: never
	CheckedAt time.Time `json:"checked_at"` // the last attempt; zero: never
	LastError string    `json:"last_error"` // of the last attempt, "" when it was good
	Prefixes  int       `json:"prefixes"`
	Stale     bool      `json:"stale"`
}

// Refresher keeps the published range lists current: at start the last good fetch stored
// in the database (so a restart does not fall back to the embedded snapshot), then every
// Interval a fetch of each list through the outbound guard. A good document replaces its
// list (stored, then swapped into detect atomically); a bad one, or a failed fetch,
// keeps the last good and is recorded as the list's error.
type Refresher struct {
	cfg    RefreshConfig
	client *http.Client
	db     *ent.Client // nil: nothing stored
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex
	lists map[string]*held // good lists, by Source.Name
	state map[string]*ListStatus
}

type held struct {
	prefixes []netip.Prefix
	asOf     time.Time
}

// NewRefresher returns a refresher fetching through guard, storing in db (nil: not stored).
func NewRefresher(cfg RefreshConfig, guard webhook.Guard, db *ent.Client, log *slog.Logger) *Refresher {
	cfg.fill()
	client := guard.Client(cfg.Timeout)
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 || req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
			return errors.New("too many redirects, or one from https to http")
		}
		return nil // every connection still goes through the guard
	}
	r := &Refresher{cfg: cfg, client: client, db: db, log: log, now: time.Now,
		lists: map[string]*held{}, state: map[string]*ListStatus{}}
	emb := detect.EmbeddedRanges()
	for _, s := range Sources {
		st := &ListStatus{Name: s.Name, Operator: s.Operator, URL: r.url(s), Source: "embedded"}
		for _, l := range emb {
			if slices.ContainsFunc(l.Agents, func(a string) bool { return slices.Contains(s.Agents, a) }) {
				st.AsOf, st.Prefixes = l.AsOf, len(l.Prefixes)
				break
			}
		}
		r.state[s.Name] = st
	}
	return r
}

func (r *Refresher) url(s Source) string {
	if u := r.cfg.URLs[s.Name]; u != "" {
		return u
	}
	return s.URL
}

// Run loads the stored lists, refreshes at once and then every Interval until ctx ends.
// With Interval 0 it loads the stored lists and returns.
func (r *Refresher) Run(ctx context.Context) {
	if err := r.Load(ctx); err != nil && ctx.Err() == nil {
		r.log.Warn("crawler ranges: reading the stored lists", "err", err)
	}
	if r.cfg.Interval <= 0 {
		return
	}
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func system(ctx context.Context) context.Context { return privacy.DecisionContext(ctx, privacy.Allow) }

// Load installs the lists an earlier fetch stored.
func (r *Refresher) Load(ctx context.Context) error {
	if r.db == nil {
		return nil
	}
	rows, err := r.db.CrawlerRangeList.Query().All(system(ctx))
	if err != nil {
		return err
	}
	r.mu.Lock()
	for _, row := range rows {
		s := SourceByName(row.ID)
		if s == nil {
			continue
		}
		st := r.state[s.Name]
		st.CheckedAt, st.LastError = row.CheckedAt, row.LastError
		var ps []netip.Prefix
		for _, p := range row.Prefixes {
			if pf, err := netip.ParsePrefix(p); err == nil {
				ps = append(ps, pf)
			}
		}
		if len(ps) == 0 || row.FetchedAt == nil {
			continue // never fetched good: the embedded copy, if any, serves
		}
		asOf := *row.FetchedAt
		if row.ListTime != nil {
			asOf = *row.ListTime
		}
		r.lists[s.Name] = &held{prefixes: ps, asOf: asOf}
		st.Source, st.AsOf, st.FetchedAt, st.Prefixes = "stored", asOf, *row.FetchedAt, len(ps)
	}
	r.mu.Unlock()
	if len(rows) > 0 { // nothing stored: the embedded set stays as it is
		r.install()
	}
	return nil
}

// Refresh fetches every list once and installs what is good.
func (r *Refresher) Refresh(ctx context.Context) {
	for _, s := range Sources {
		if ctx.Err() != nil {
			return
		}
		r.refreshOne(ctx, s)
	}
	r.install()
}

func (r *Refresher) refreshOne(ctx context.Context, s Source) {
	u := r.url(s)
	now := r.now().UTC()
	ps, asOf, err := r.fetch(ctx, u)
	r.mu.Lock()
	st := r.state[s.Name]
	st.URL, st.CheckedAt = u, now
	if err != nil {
		st.LastError = clip.Bytes(err.Error(), 500)
	} else {
		if asOf.IsZero() {
			asOf = now
		}
		r.lists[s.Name] = &held{prefixes: ps, asOf: asOf}
		st.Source, st.AsOf, st.FetchedAt, st.LastError, st.Prefixes = "fetched", asOf, now, "", len(ps)
	}
	row := *st
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("crawler ranges: keeping the last good list", "list", s.Name, "url", u, "err", err)
	}
	if r.db != nil {
		if err := r.store(ctx, row, ps); err != nil && ctx.Err() == nil {
			r.log.Warn("crawler ranges: storing the list", "list", s.Name, "err", err)
		}
	}
}

func (r *Refresher) fetch(ctx context.Context, u string) ([]netip.Prefix, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("User-Agent", "Flytrap crawler-range refresh (+https://github.com/flytrap/flytrap)")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.cfg.MaxBytes+1))
	if err != nil {
		return nil, time.Time{}, err
	}
	if int64(len(body)) > r.cfg.MaxBytes {
		return nil, time.Time{}, fmt.Errorf("document larger than %d bytes", r.cfg.MaxBytes)
	}
	return ParseList(body)
}

// store upserts the list's row: after a good fetch its prefixes and dates, after a failed
// one the attempt and its error only (the prefixes of the last good fetch stay).
func (r *Refresher) store(ctx context.Context, st ListStatus, ps []netip.Prefix) error {
	ctx = system(ctx)
	c := r.db.CrawlerRangeList.Create().SetID(st.Name).SetURL(st.URL).SetCheckedAt(st.CheckedAt).SetLastError(st.LastError)
	if ps == nil {
		return c.OnConflictColumns(crawlerrangelist.FieldID).
			Update(func(u *ent.CrawlerRangeListUpsert) { u.UpdateURL().UpdateCheckedAt().UpdateLastError() }).Exec(ctx)
	}
	strs := make([]string, len(ps))
	for i, p := range ps {
		strs[i] = p.String()
	}
	return c.SetPrefixes(strs).SetListTime(st.AsOf).SetFetchedAt(st.FetchedAt).
		OnConflictColumns(crawlerrangelist.FieldID).UpdateNewValues().Exec(ctx)
}

// install swaps the set in effect: the embedded lists, replaced agent by agent by the good
// lists held.
func (r *Refresher) install() {
	lists := detect.EmbeddedRanges()
	r.mu.Lock()
	for _, s := range Sources {
		h := r.lists[s.Name]
		if h == nil {
			continue
		}
		lists = append(lists, detect.RangeList{Name: s.Name, Operator: s.Operator, Agents: s.Agents,
			Prefixes: h.prefixes, AsOf: h.asOf, Fetched: true})
	}
	r.mu.Unlock()
	detect.SetRanges(detect.NewRangeSet(lists))
}

// Status returns every list's state, stale marked: with refresh on, a list whose last good
// fetch is older than StaleAfter intervals, or that was never fetched (the embedded copy).
func (r *Refresher) Status() []ListStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	var out []ListStatus
	for _, s := range Sources {
		st := *r.state[s.Name]
		st.Stale = Stale(st, r.cfg.Interval, r.cfg.StaleAfter, now)
		out = append(out, st)
	}
	return out
}

// Stale says whether a list is stale given the refresh interval (0: refresh off, never stale).
func Stale(st ListStatus, interval time.Duration, after int, now time.Time) bool {
	if interval <= 0 {
		return false
	}
	if st.FetchedAt.IsZero() {
		return true
	}
	return now.Sub(st.FetchedAt) > time.Duration(after)*interval
}

// Age is how old the list in effect is: since its last good fetch, or its snapshot's date.
func (st ListStatus) Age(now time.Time) time.Duration {
	if !st.FetchedAt.IsZero() {
		return now.Sub(st.FetchedAt)
	}
	if st.AsOf.IsZero() {
		return 0
	}
	return now.Sub(st.AsOf)
}
