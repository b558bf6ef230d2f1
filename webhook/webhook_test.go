package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/webhook"
)

// verifyStandardWebhook is the Standard Webhooks reference verification, written out from the
// specification (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md)
// independently of package webhook: the key is the base64 after "whsec_", the signed content
// "msg_id.timestamp.payload", and the header a space-separated list of "v1,<base64>".
func verifyStandardWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp too far from now")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no matching signature")
}

func TestSignMatchesReference(t *testing.T) {
	// The specification's published example (also the standardwebhooks libraries' test vector).
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"test": 2432232314}`)
	sig, err := webhook.Sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body)
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; sig != want {
		t.Fatalf("signature %s, want the specification's %s", sig, want)
	}
	// Rotation: both secrets sign, and each verifies on its own.
	newer := webhook.NewSecret()
	if !strings.HasPrefix(newer, "whsec_") || len(newer) != len("whsec_")+44 {
		t.Fatalf("secret %q", newer)
	}
	now := time.Now()
	h := http.Header{}
	h.Set("webhook-id", "evt_1")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	both, _ := webhook.Sign([]string{newer, secret}, "evt_1", now.Unix(), body)
	h.Set("webhook-signature", both)
	if strings.Count(both, "v1,") != 2 {
		t.Fatalf("rotation signature %q, want two", both)
	}
	for _, s := range []string{newer, secret} {
		if err := verifyStandardWebhook(s, h, body, now); err != nil {
			t.Fatalf("verify with %s: %v", s, err)
		}
	}
	if err := verifyStandardWebhook(webhook.NewSecret(), h, body, now); err == nil {
		t.Fatal("an unrelated secret verified")
	}
}

func TestGuard(t *testing.T) {
	var g webhook.Guard
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "::1", "fd00:ec2::254",
		"fe80::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "224.0.0.1"} {
		if g.Permits(netip.MustParseAddr(a)) {
			t.Errorf("%s permitted by default", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"} {
		if !g.Permits(netip.MustParseAddr(a)) {
			t.Errorf("%s refused", a)
		}
	}
	g.Allow = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	if !g.Permits(netip.MustParseAddr("10.1.2.3")) || g.Permits(netip.MustParseAddr("192.168.1.1")) {
		t.Error("allow-list not applied")
	}
}

// receiver is a local webhook target whose answers the test scripts.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
	// answer decides the response to the n-th request (0-based); nil answers 204.
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

func newReceiver(t testing.TB, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.reqs)
		rc.reqs = append(rc.reqs, received{header: r.Header.Clone(), body: body, at: time.Now()})
		rc.mu.Unlock()
		if rc.answer != nil {
			rc.answer(n, w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

// fast is a dispatcher configuration for tests: a local receiver allowed, retries in milliseconds.
// distinctIDs counts the distinct messages (webhook-id) a receiver got.
func distinctIDs(rc *receiver) int {
	seen := map[string]bool{}
	for _, r := range rc.got() {
		seen[r.header.Get("webhook-id")] = true
	}
	return len(seen)
}

func fast(cfg *server.Config) {
	cfg.Webhook.AllowPrivate = true
	cfg.Webhook.Timeout = 300 * time.Millisecond
	cfg.Webhook.Poll = 20 * time.Millisecond
	cfg.Webhook.Schedule = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
}

func createEndpoint(t testing.TB, env *ft.Env, token string, input map[string]any) (id, secret string) {
	t.Helper()
	data := env.MustGraphQL(token, `mutation($in: CreateWebhookEndpointInput!) {
		createWebhookEndpoint(input: $in) { secret endpoint { id url active format } } }`, map[string]any{"in": input})
	return ft.Dig(data, "createWebhookEndpoint", "endpoint", "id").(string), ft.Dig(data, "createWebhookEndpoint", "secret").(string)
}

// appendEvent writes an event as the detection engine does, in a transaction of its own.
func appendEvent(t testing.TB, env *ft.Env, org, typ string, data map[string]any) *ent.Event {
	t.Helper()
	ctx := ft.System()
	tx, err := env.DB.Client.Tx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := event.Append(ctx, tx, org, typ, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return ev
}

func deliveries(t *testing.T, env *ft.Env, endpoint string) []*ent.WebhookDelivery {
	t.Helper()
	ds, err := env.DB.Client.WebhookDelivery.Query().Where(webhookdelivery.EndpointID(endpoint)).
		Order(webhookdelivery.ByCreatedAt(), webhookdelivery.ByID()).All(ft.System())
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func settled(t *testing.T, env *ft.Env, endpoint string, n int) func() bool {
	return func() bool {
		ds := deliveries(t, env, endpoint)
		if len(ds) < n {
			return false
		}
		for _, d := range ds {
			if d.Status == webhookdelivery.StatusPENDING {
				return false
			}
		}
		return true
	}
}

// The receiver fails, times out, then recovers: the delivery is retried to success, every
// attempt is logged, and the successful request verifies with the reference algorithm.
func TestRetriedToSuccess(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		a := env.Tenant("acme")
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 0:
				http.Error(w, "boom", http.StatusInternalServerError)
			case 1:
				time.Sleep(600 * time.Millisecond) // past the attempt timeout
			case 2:
				w.WriteHeader(http.StatusFound) // a redirect is not followed, and not a success
				w.Header().Set("Location", "http://169.254.169.254/")
			default:
				w.Write([]byte(`{"ok":true}`))
			}
		})
		// The receiver is on loopback: its answers are kept only because the organization opted in.
		env.DB.Client.Organization.UpdateOne(a.Org).SetWebhookShowPrivateResponses(true).ExecX(ft.System())
		ep, secret := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL + "/hook", "eventTypes": []string{"trap.*"}})
		env.CreateTrap(a.ReadWrite, "Pricing", "page")
		waitFor(t, "the delivery", settled(t, env, ep, 1))
		ds := deliveries(t, env, ep)
		d := ds[0]
		if d.Status != webhookdelivery.StatusSUCCEEDED || d.AttemptCount != 4 || len(d.Attempts) != 4 {
			t.Fatalf("delivery %s after %d attempts (%v), want SUCCEEDED after 4", d.Status, d.AttemptCount, d.Attempts)
		}
		codes := []int{}
		for _, at := range d.Attempts {
			codes = append(codes, at.StatusCode)
		}
		if fmt.Sprint(codes) != "[500 0 302 200]" || d.Attempts[1].Error != webhook.MsgTimeout ||
			d.Attempts[0].Response != "boom\n" || d.Attempts[3].Response != `{"ok":true}` {
			t.Fatalf("attempt log %+v", d.Attempts)
		}
		got := rc.got()
		last := got[len(got)-1]
		if err := verifyStandardWebhook(secret, last.header, last.body, time.Now()); err != nil {
			t.Fatalf("signature: %v", err)
		}
		var msg map[string]any
		if err := json.Unmarshal(last.body, &msg); err != nil || msg["type"] != "trap.created" || last.header.Get("webhook-id") != msg["id"] {
			t.Fatalf("body %s, webhook-id %s", last.body, last.header.Get("webhook-id"))
		}
		// Every attempt carries the same message id, so receivers can deduplicate.
		for _, r := range got {
			if r.header.Get("webhook-id") != d.MessageID {
				t.Fatalf("webhook-id %s, want %s", r.header.Get("webhook-id"), d.MessageID)
			}
		}
		// Through GraphQL: the deliveries with their attempts; a read-only key may not see them.
		q := `query($id: ID!) { webhookDeliveries(endpointID: $id, first: 10) { edges { node { status attemptCount attempts { statusCode latencyMs response } } } } }`
		data := env.MustGraphQL(a.ReadWrite, q, map[string]any{"id": ep})
		if ft.Dig(data, "webhookDeliveries", "edges", 0, "node", "status") != "SUCCEEDED" ||
			ft.Dig(data, "webhookDeliveries", "edges", 0, "node", "attempts", 3, "statusCode") != float64(200) {
			t.Fatalf("webhookDeliveries %v", data)
		}
		if r := env.GraphQL(a.ReadOnly, q, map[string]any{"id": ep}); r.Code() != "FORBIDDEN" {
			t.Fatalf("read-only key: %s", r.Raw)
		}
	})
}

// Retries run out on the schedule; Retry-After is honoured; 410 turns the endpoint off with an event.
func TestGiveUpRetryAfterAndGone(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		a := env.Tenant("acme")
		failing := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				w.Header().Set("Retry-After", "1")
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		})
		ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": failing.URL, "eventTypes": []string{"trap.created"}})
		gone := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
		goneEP, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": gone.URL, "eventTypes": []string{"trap.created"}})
		watcher := newReceiver(t, nil)
		watchEP, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": watcher.URL, "eventTypes": []string{"webhook.*"}})
		env.CreateTrap(a.ReadWrite, "Pricing", "page")
		waitFor(t, "retries to run out", settled(t, env, ep, 1))
		d := deliveries(t, env, ep)[0]
		if d.Status != webhookdelivery.StatusFAILED || d.AttemptCount != 5 {
			t.Fatalf("delivery %s after %d attempts, want FAILED after 5 (1 + 4 retries)", d.Status, d.AttemptCount)
		}
		got := failing.got()
		if gap := got[1].at.Sub(got[0].at); gap < time.Second {
			t.Fatalf("second attempt %v after the first, want at least Retry-After: 1", gap)
		}
		waitFor(t, "the 410", settled(t, env, goneEP, 1))
		e, _ := env.DB.Client.WebhookEndpoint.Get(ft.System(), goneEP)
		if e.Active || !strings.Contains(e.DisabledReason, "410") || len(gone.got()) != 1 {
			t.Fatalf("after 410: active=%v reason=%q attempts=%d", e.Active, e.DisabledReason, len(gone.got()))
		}
		waitFor(t, "the endpoint_disabled event delivered", settled(t, env, watchEP, 1))
		var msg map[string]any
		_ = json.Unmarshal(watcher.got()[0].body, &msg)
		if msg["type"] != event.WebhookEndpointDisabled || ft.Dig(msg, "data", "endpoint_id") != goneEP {
			t.Fatalf("event %v", msg)
		}
		// An endpoint failing for 5 days is turned off at its next failure.
		env.DB.Client.WebhookEndpoint.UpdateOneID(ep).SetFailingSince(time.Now().Add(-121 * time.Hour)).ExecX(ft.System())
		env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { pingWebhookEndpoint(id: $id) { id } }`, map[string]any{"id": ep})
		waitFor(t, "the endpoint to be disabled", func() bool {
			e, _ := env.DB.Client.WebhookEndpoint.Get(ft.System(), ep)
			return !e.Active && strings.HasPrefix(e.DisabledReason, "failing since")
		})
		n, _ := env.DB.Client.Event.Query().Where().All(ft.System())
		disabled := 0
		for _, ev := range n {
			if ev.Type == event.WebhookEndpointDisabled {
				disabled++
			}
		}
		if disabled != 2 {
			t.Fatalf("%d endpoint_disabled events, want 2", disabled)
		}
		// Turned on again, it starts afresh.
		data := env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: {active: true}) { active failingSince disabledReason } }`, map[string]any{"id": ep})
		if ft.Dig(data, "updateWebhookEndpoint", "failingSince") != nil || ft.Dig(data, "updateWebhookEndpoint", "disabledReason") != "" {
			t.Fatalf("re-enabled %v", data)
		}
	})
}

// At most one threat alert per session and severity per throttle window: repeats are merged,
// a higher severity (an escalation) is always sent; other sessions and endpoints are not held back.
func TestThrottle(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		a := env.Tenant("acme")
		rc := newReceiver(t, nil)
		ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL, "throttleMinutes": 15, "format": "slack"})
		all := newReceiver(t, nil)
		allEP, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": all.URL, "eventTypes": []string{"threat.detected", "threat.escalated"}})
		threat := func(session, severity string) map[string]any {
			return map[string]any{"session_id": session, "source_ip": "203.0.113.9", "classification": "ai_agent", "severity": severity, "score": 80}
		}
		appendEvent(t, env, a.Org.ID, event.ThreatDetected, threat("ses_1", "high"))
		appendEvent(t, env, a.Org.ID, event.ThreatDetected, threat("ses_1", "high"))      // a repeat: merged
		appendEvent(t, env, a.Org.ID, event.ThreatEscalated, threat("ses_1", "critical")) // an escalation: sent
		appendEvent(t, env, a.Org.ID, event.ThreatEscalated, threat("ses_1", "critical")) // a repeat: merged
		appendEvent(t, env, a.Org.ID, event.ThreatDetected, threat("ses_1", "medium"))    // lower than sent: merged
		appendEvent(t, env, a.Org.ID, event.ThreatDetected, threat("ses_2", "medium"))
		waitFor(t, "deliveries", settled(t, env, ep, 6))
		waitFor(t, "deliveries", settled(t, env, allEP, 6))
		var statuses []string
		for _, d := range deliveries(t, env, ep) {
			statuses = append(statuses, string(d.Status))
		}
		// Delivery is at least once: count messages by webhook-id, not requests.
		if want := "[SUCCEEDED SUPPRESSED SUCCEEDED SUPPRESSED SUPPRESSED SUCCEEDED]"; fmt.Sprint(statuses) != want || distinctIDs(rc) != 3 || distinctIDs(all) != 6 {
			t.Fatalf("statuses %v (want %s), sent %d and %d messages", statuses, want, distinctIDs(rc), distinctIDs(all))
		}
		var escalated bool
		for _, r := range rc.got() {
			var msg map[string]any
			_ = json.Unmarshal(r.body, &msg)
			text, _ := msg["text"].(string)
			if !strings.Contains(text, "AI agent") {
				t.Fatalf("slack message %v", msg)
			}
			escalated = escalated || strings.Contains(text, "escalated") && strings.Contains(text, "critical")
		}
		if !escalated {
			t.Fatal("the escalation to critical was not sent")
		}
	})
}

// A private target is refused by default, at connect time, and the attempt says so.
func TestPrivateTargetRefused(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], func(cfg *server.Config) {
		fast(cfg)
		cfg.Webhook.AllowPrivate = false
	})
	a := env.Tenant("acme")
	rc := newReceiver(t, nil)
	// A public-looking name that resolves to loopback is refused the same way as the address.
	url := strings.Replace(rc.URL, "127.0.0.1", "localhost", 1)
	ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": url})
	env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { pingWebhookEndpoint(id: $id) { id } }`, map[string]any{"id": ep})
	waitFor(t, "the attempts", settled(t, env, ep, 1))
	d := deliveries(t, env, ep)[0]
	if len(rc.got()) != 0 || d.Status != webhookdelivery.StatusFAILED || d.Attempts[0].Error != webhook.MsgNotAllowed {
		t.Fatalf("private target: %d requests, %s, %+v", len(rc.got()), d.Status, d.Attempts)
	}
}

// A delivery claimed by an instance that died is sent once its lease runs out.
func TestExpiredLeaseIsRetried(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		a := env.Tenant("acme")
		rc := newReceiver(t, nil)
		ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL})
		// Turned off, so nothing is sent while we pose as a crashed instance holding a lease.
		env.DB.Client.WebhookEndpoint.UpdateOneID(ep).SetActive(false).ExecX(ft.System())
		env.DB.Client.WebhookEndpoint.UpdateOneID(ep).SetActive(true).ExecX(ft.System())
		ctx := ft.System()
		lease := time.Now().Add(time.Second).UTC().Truncate(time.Millisecond)
		d := env.DB.Client.WebhookDelivery.Create().SetOrgID(a.Org.ID).SetEndpointID(ep).SetMessageID("evt_x").
			SetEventType("trap.created").SetPayload(map[string]any{"id": "evt_x"}).SetLeaseUntil(lease).SaveX(ctx)
		waitFor(t, "the retry", settled(t, env, ep, 1))
		got := rc.got()
		if len(got) != 1 || got[0].at.Before(lease) {
			t.Fatalf("%d requests, first at %v, lease until %v", len(got), got, lease)
		}
		if dd := env.DB.Client.WebhookDelivery.GetX(ctx, d.ID); dd.Status != webhookdelivery.StatusSUCCEEDED {
			t.Fatalf("status %s", dd.Status)
		}
	})
}

// Two instances on one PostgreSQL database send each delivery once.
func TestTwoInstancesSendOnce(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	one := ft.StartOn(t, dsn, fast)
	two := ft.StartOn(t, dsn, fast)
	a := one.Tenant("acme")
	var mu sync.Mutex
	seen := map[string]int{}
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	})
	var eps []string
	for range 5 {
		id, _ := createEndpoint(t, one, a.ReadWrite, map[string]any{"url": rc.URL})
		eps = append(eps, id)
	}
	const events = 100
	var wg sync.WaitGroup
	for i := range events {
		env := one
		if i%2 == 1 {
			env = two
		}
		wg.Go(func() {
			appendEvent(t, env, a.Org.ID, event.ThreatDetected, map[string]any{"session_id": fmt.Sprint("ses_", i)})
		})
	}
	wg.Wait()
	for _, ep := range eps {
		waitFor(t, "every delivery", settled(t, one, ep, events))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != events {
		t.Fatalf("%d distinct messages, want %d", len(seen), events)
	}
	for id, n := range seen {
		if n != len(eps) {
			t.Fatalf("message %s received %d times, want %d (once per endpoint)", id, n, len(eps))
		}
	}
	if one.Server.Webhooks().Attempts() == 0 || two.Server.Webhooks().Attempts() == 0 {
		t.Logf("attempts: %d and %d (one instance did all the work)", one.Server.Webhooks().Attempts(), two.Server.Webhooks().Attempts())
	}
	total := one.Server.Webhooks().Attempts() + two.Server.Webhooks().Attempts()
	if total != int64(events*len(eps)) {
		t.Fatalf("%d attempts in all, want %d", total, events*len(eps))
	}
}

// An instance stopped in the middle of attempts (and of a retry schedule) loses nothing: the next
// instance on the database sends every delivery.
func TestStopMidRetryThenRestart(t *testing.T) {
	dsn := ft.SQLiteDSN(t)
	ctx := ft.System()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := server.DefaultConfig()
	cfg.APIAddr, cfg.TrapAddr = "127.0.0.1:0", "127.0.0.1:1"
	fast(&cfg)
	cfg.Webhook.Schedule = []time.Duration{time.Hour} // a retry due long after the stop
	srv, err := server.New(context.Background(), cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	wait := srv.Start(runCtx)

	healthy := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-healthy:
			w.WriteHeader(http.StatusNoContent)
			return
		default:
		}
		if n == 0 {
			w.WriteHeader(http.StatusBadGateway) // one delivery goes into its retry schedule
			return
		}
		<-r.Context().Done() // the others hang until the instance stops
	})
	org := db.Client.Organization.Create().SetName("acme").SaveX(ctx)
	ep := db.Client.WebhookEndpoint.Create().SetOrgID(org.ID).SetURL(rc.URL).SetSecret(webhook.NewSecret()).SaveX(ctx)
	const events = 10
	for i := range events {
		c, err := db.Client.Tx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := event.Append(ctx, c, org.ID, event.ThreatDetected, map[string]any{"session_id": fmt.Sprint("ses_", i)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "attempts in flight", func() bool { return len(rc.got()) >= 5 })
	stop()
	wait()

	// Healthy again, and a new instance on the same database.
	close(healthy)
	db.Client.WebhookDelivery.Update().Where(webhookdelivery.StatusEQ(webhookdelivery.StatusPENDING)).
		SetNextAttemptAt(time.Now()).ExecX(ctx) // the retry's hour has passed
	env := ft.StartOn(t, dsn, fast)
	waitFor(t, "every delivery", settled(t, env, ep.ID, events))
	seen := map[string]bool{}
	for _, r := range rc.got() {
		seen[r.header.Get("webhook-id")] = true
	}
	for _, d := range deliveries(t, env, ep.ID) {
		if d.Status != webhookdelivery.StatusSUCCEEDED || !seen[d.MessageID] {
			t.Fatalf("delivery %s: %s", d.ID, d.Status)
		}
	}
}

// A real visitor's threat alert names the class in words, the user agent, the trap by name
// and the signals, and links to the session in the dashboard; the JSON format keeps the
// envelope and adds the context.
func TestAlertContextEndToEnd(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast, func(cfg *server.Config) { cfg.PublicURL = "https://flytrap.example.com" })
		a := env.Tenant("acme")
		sl := newReceiver(t, nil)
		createEndpoint(t, env, a.ReadWrite, map[string]any{"url": sl.URL, "format": "slack", "eventTypes": []string{"threat.*"}})
		js := newReceiver(t, nil)
		createEndpoint(t, env, a.ReadWrite, map[string]any{"url": js.URL, "eventTypes": []string{"threat.*"}})
		env.MustGraphQL(a.ReadWrite, `mutation { createTrap(input:{name:"Internal *docs*", type: page, path:"/internal/docs"}) { id } }`, nil)

		const ua = "python-requests/2.32.3 <!channel>"
		get := func(path string) string {
			req, _ := http.NewRequest(http.MethodGet, env.Trap.URL+path, nil)
			req.Header.Set("User-Agent", ua)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return string(body)
		}
		page := get("/internal/docs")
		for _, u := range decoy.TokenURL.FindAllString(page, -1) {
			get(u)
		}
		waitFor(t, "the alerts", func() bool { return len(sl.got()) > 0 && len(js.got()) > 0 })

		var msg map[string]any
		_ = json.Unmarshal(sl.got()[0].body, &msg)
		text := ft.Dig(msg, "blocks", 0, "text", "text").(string)
		for _, want := range []string{"Threat detected: Bot (", "User agent: `python-requests/2.32.3 &lt;!channel&gt;`",
			"Traps: `Internal *docs* (/internal/docs)`", "Signals: `", "CALLBACK_HIT", "|Open the session in Flytrap>"} {
			if !strings.Contains(text, want) {
				t.Errorf("slack alert lacks %q:\n%s", want, text)
			}
		}
		var ev map[string]any
		_ = json.Unmarshal(js.got()[0].body, &ev)
		sessionID, _ := ft.Dig(ev, "data", "session_id").(string)
		if ev["type"] != event.ThreatDetected || sessionID == "" || ft.Dig(ev, "data", "classification") != "bot" ||
			ft.Dig(ev, "context", "user_agent") != ua || ft.Dig(ev, "context", "traps", 0, "name") != "Internal *docs*" ||
			ft.Dig(ev, "context", "classification_label") != "Bot" ||
			ft.Dig(ev, "context", "session_url") != "https://flytrap.example.com/sessions/"+sessionID {
			t.Errorf("json alert %s", js.got()[0].body)
		}
	})
}
