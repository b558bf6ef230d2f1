package crawler

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/flytraptest/testdb"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/webhook"
)

func TestParseList(t *testing.T) {
	ps, at, err := ParseList([]byte(`{"creationTime": "2026-11-26T18:00:13.000000", "prefixes": [{"ipv6Prefix": "2001:4860:4801:10::/64"}, {"ipv4Prefix": "66.249.64.0/27"}]}`))
	if err != nil || len(ps) != 2 || at != time.Date(2026, 11, 26, 18, 0, 13, 0, time.UTC) {
		t.Fatalf("%v %v %v", ps, at, err)
	}
	if _, at, err := ParseList([]byte(`{"creationTime": "2026-11-26T18:00:13Z", "syncToken": "1", "prefixes": [{"ipv4Prefix": "66.249.64.0/27"}]}`)); err != nil || at.IsZero() {
		t.Fatal(at, err)
	}
	for _, bad := range []string{
		``, `[]`, `{"prefixes": []}`, `{"prefixes": [{"ipv4Prefix": "66.249.64.0/33"}]}`,
		`{"prefixes": [{"ipv4Prefix": "2001:db8::/32"}]}`, `{"prefixes": [{"ipv6Prefix": "10.0.0.0/8"}]}`,
		`{"prefixes": [{"ipv4Prefix": "66.249.64.0/27", "ipv6Prefix": "2001:db8::/32"}]}`,
		`{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}], "surprise": 1}`,
		`{"creationTime": "yesterday", "prefixes": [{"ipv4Prefix": "66.249.64.0/27"}]}`,
		`{"prefixes": [{"ipv4Prefix": "66.249.64.0/27"}]} {}`, `<html>Not Found</html>`,
	} {
		if _, _, err := ParseList([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// operators serves every list from httptest on loopback; a test changes what it serves.
type operators struct {
	mu   sync.Mutex
	docs map[string]string // list name → body ("": 404)
	srv  *httptest.Server
}

func startOperators(t *testing.T) *operators {
	o := &operators{docs: map[string]string{}}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		body := o.docs[strings.TrimPrefix(r.URL.Path, "/")]
		o.mu.Unlock()
		if body == "" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *operators) set(name, body string) {
	o.mu.Lock()
	o.docs[name] = body
	o.mu.Unlock()
}

func (o *operators) urls() map[string]string {
	m := map[string]string{}
	for _, s := range Sources {
		m[s.Name] = o.srv.URL + "/" + s.Name
	}
	return m
}

const googleDoc = `{"creationTime": "2026-11-26T18:00:13.000000", "prefixes": [{"ipv4Prefix": "203.0.113.0/24"}]}`

func TestRefresh(t *testing.T) {
	t.Cleanup(func() { detect.SetRanges(nil) })
	op := startOperators(t)
	op.set("googlebot", googleDoc)
	op.set("bingbot", `{"prefixes": "nope"}`)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	google, bing := detect.Agent{Name: "Googlebot"}, detect.Agent{Name: "bingbot"}
	fresh := netip.MustParseAddr("203.0.113.7")
	bingAddr := netip.MustParseAddr("157.55.39.1") // in the embedded bingbot list

	// The guard refuses loopback unless the operator allows it.
	r := NewRefresher(RefreshConfig{Interval: time.Hour, URLs: op.urls()}, webhook.Guard{}, nil, log)
	r.Refresh(context.Background())
	if st := status(r, "googlebot"); st.Source != "embedded" || !strings.Contains(st.LastError, "refused") || !st.Stale {
		t.Fatalf("a loopback list fetched past the guard: %+v", st)
	}

	r = NewRefresher(RefreshConfig{Interval: time.Hour, URLs: op.urls()}, webhook.Guard{AllowPrivate: true}, nil, log)
	if !detect.UnverifiedClaim(google, fresh) {
		t.Fatal("203.0.113.7 is outside the embedded Googlebot list")
	}
	r.Refresh(context.Background())
	if detect.UnverifiedClaim(google, fresh) || !detect.UnverifiedClaim(google, netip.MustParseAddr("66.249.66.1")) {
		t.Fatal("the fetched Googlebot list is not the one in effect")
	}
	if st := status(r, "googlebot"); st.Source != "fetched" || st.Stale || st.Prefixes != 1 || st.AsOf != time.Date(2026, 11, 26, 18, 0, 13, 0, time.UTC) {
		t.Fatalf("%+v", st)
	}
	// A bad document keeps the last good list (here the embedded one), and says why.
	if detect.UnverifiedClaim(bing, bingAddr) {
		t.Fatal("a bad bingbot document replaced the embedded list")
	}
	if st := status(r, "bingbot"); st.Source != "embedded" || !st.Stale || !strings.Contains(st.LastError, "not a published range list") {
		t.Fatalf("%+v", st)
	}
	// A later bad document, or an unreachable list, keeps the last good fetch.
	op.set("googlebot", `{"prefixes": [{"ipv4Prefix": "not an address"}]}`)
	r.Refresh(context.Background())
	if detect.UnverifiedClaim(google, fresh) {
		t.Fatal("a bad document replaced the last good list")
	}
	if st := status(r, "googlebot"); st.Source != "fetched" || st.LastError == "" {
		t.Fatalf("%+v", st)
	}
	// Stale once the last good fetch is older than three intervals.
	r.now = func() time.Time { return time.Now().Add(4 * time.Hour) }
	if st := status(r, "googlebot"); !st.Stale {
		t.Fatalf("%+v", st)
	}
	// Refresh off: nothing is stale, whatever its age.
	off := NewRefresher(RefreshConfig{URLs: op.urls()}, webhook.Guard{AllowPrivate: true}, nil, log)
	if st := status(off, "googlebot"); st.Stale || st.Source != "embedded" || st.Age(time.Now()) < 24*time.Hour {
		t.Fatalf("%+v", st)
	}
}

func TestRefreshBounds(t *testing.T) {
	t.Cleanup(func() { detect.SetRanges(nil) })
	op := startOperators(t)
	op.set("googlebot", `{"prefixes": [`+strings.Repeat(`{"ipv4Prefix": "203.0.113.0/24"},`, 100)+`{"ipv4Prefix": "203.0.113.0/24"}]}`)
	r := NewRefresher(RefreshConfig{Interval: time.Hour, URLs: op.urls(), MaxBytes: 1024}, webhook.Guard{AllowPrivate: true}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r.Refresh(context.Background())
	if st := status(r, "googlebot"); st.Source != "embedded" || !strings.Contains(st.LastError, "larger than 1024 bytes") {
		t.Fatalf("%+v", st)
	}
}

func status(r *Refresher, name string) ListStatus {
	for _, st := range r.Status() {
		if st.Name == name {
			return st
		}
	}
	return ListStatus{}
}

// TestRefreshStored: a good fetch is stored, and a restarted instance (a new Refresher on
// the same database) starts from it, not from the embedded snapshot, even with refresh off;
// a failed attempt is stored as the list's error and keeps the last good prefixes.
func TestRefreshStored(t *testing.T) {
	testdb.ForEachBackend(t, func(t *testing.T, b testdb.Backend) {
		t.Cleanup(func() { detect.SetRanges(nil) })
		db, err := store.Open(context.Background(), b.DSN(t))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		op := startOperators(t)
		op.set("googlebot", googleDoc)
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		guard := webhook.Guard{AllowPrivate: true}
		NewRefresher(RefreshConfig{Interval: time.Hour, URLs: op.urls()}, guard, db.Client, log).Refresh(context.Background())
		op.set("googlebot", "")
		NewRefresher(RefreshConfig{Interval: time.Hour, URLs: op.urls()}, guard, db.Client, log).Refresh(context.Background()) // 404 now

		detect.SetRanges(nil) // as a new process starts
		google, fresh := detect.Agent{Name: "Googlebot"}, netip.MustParseAddr("203.0.113.7")
		if !detect.UnverifiedClaim(google, fresh) {
			t.Fatal("the embedded list does not hold 203.0.113.7")
		}
		r := NewRefresher(RefreshConfig{URLs: op.urls()}, guard, db.Client, log) // refresh off
		r.Run(context.Background())                                              // loads and returns
		if detect.UnverifiedClaim(google, fresh) {
			t.Fatal("a restart fell back to the embedded list")
		}
		st := status(r, "googlebot")
		if st.Source != "stored" || st.Prefixes != 1 || st.LastError != "HTTP 404" || st.FetchedAt.IsZero() || st.AsOf != time.Date(2026, 11, 26, 18, 0, 13, 0, time.UTC) {
			t.Fatalf("%+v", st)
		}
		if st := status(r, "bingbot"); st.Source != "embedded" || st.LastError != "HTTP 404" {
			t.Fatalf("%+v", st)
		}
	})
}
