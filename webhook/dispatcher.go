package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/organization"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/ent/webhookendpoint"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/wire"
)

// DefaultSchedule is the wait before each retry: 8 attempts over about 31.5 hours.
// Each wait is jittered by ±20%, and a longer Retry-After from the receiver wins.
var DefaultSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 14 * time.Hour,
}

// Config is the dispatcher's part of the service configuration.
type Config struct {
	// AllowPrivate and AllowCIDRs are the instance-wide default every organization gets, on top
	// of its own (Network). Answers from addresses that needed either are not stored unless the
	// organization opted in (Network.ShowPrivateResponses).
	AllowPrivate bool           // deliver to private, loopback and link-local addresses too
	AllowCIDRs   []netip.Prefix // networks allowed despite being private
	Workers      int            // deliveries sent at once per instance
	Timeout      time.Duration  // one attempt, connection to last byte
	Poll         time.Duration  // how often due deliveries are looked for besides wake-ups
	// Lease is how long a claimed delivery is this instance's; a crash lets it expire and another retry.
	Lease time.Duration
	// Schedule is the wait before each retry; len(Schedule)+1 attempts in all.
	Schedule []time.Duration
	// DisableAfter turns off an endpoint that has failed without a success for this long.
	DisableAfter time.Duration
	// PublicURL is the dashboard's external base URL, for links in alerts (--public-url); empty: no links.
	PublicURL string
	// RootCAs, when set, replaces the system's roots for verifying receivers' certificates, HTTPS
	// and syslog over TLS alike (--webhook-ca-file: an internal SIEM's CA); nil: the system's.
	RootCAs *x509.CertPool
}

// DefaultConfig is the production configuration.
func DefaultConfig() Config {
	return Config{
		Workers:      16,
		Timeout:      15 * time.Second,
		Poll:         time.Second,
		Lease:        2 * time.Minute,
		Schedule:     DefaultSchedule,
		DisableAfter: 5 * 24 * time.Hour,
	}
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.Workers < 1 || c.Timeout < 100*time.Millisecond || c.Poll < 10*time.Millisecond {
		return errors.New("webhook-workers must be positive, webhook-timeout at least 100ms, webhook-poll-interval at least 10ms")
	}
	return nil
}

// Dispatcher sends due deliveries. Every instance runs one; leases keep them from
// sending the same delivery at once.
type Dispatcher struct {
	client  *ent.Client
	dialect string
	cfg     Config
	clients clients
	log     *slog.Logger
	now     func() time.Time
	wake    chan struct{}

	sent    atomic.Int64 // attempts made, for tests and benchmarks
	observe AttemptObserver
}

// Outcomes of an attempt, as an AttemptObserver hears them.
const (
	OutcomeSuccess   = "success"    // a 2xx answer
	OutcomeHTTPError = "http_error" // any other answer
	OutcomeError     = "error"      // no answer: refused address, connection, timeout, building the request
)

// AttemptObserver is told of every attempt: its outcome, how long the delivery had been
// due when the attempt began (lag), and how long the attempt took. It must not block.
type AttemptObserver func(outcome string, lag, took time.Duration)

// Observe sets the dispatcher's AttemptObserver; call it before Run.
func (d *Dispatcher) Observe(o AttemptObserver) { d.observe = o }

// New returns a dispatcher over client (dialect says how to claim). A delivery committed on this
// instance wakes it at once; others are found by polling.
func New(client *ent.Client, dia string, cfg Config, log *slog.Logger, now func() time.Time) *Dispatcher {
	if now == nil {
		now = time.Now
	}
	if len(cfg.Schedule) == 0 {
		cfg.Schedule = DefaultSchedule
	}
	// A claimed delivery may wait behind two rounds of attempts and then take one itself.
	cfg.Lease = max(cfg.Lease, 4*cfg.Timeout+5*time.Second)
	d := &Dispatcher{
		client: client, dialect: dia, cfg: cfg, log: log, now: now,
		clients: clients{timeout: cfg.Timeout, roots: cfg.RootCAs, byKey: map[string]*http.Client{}},
		wake:    make(chan struct{}, 1),
	}
	return d
}

// WakeHook wakes the dispatcher when a new delivery commits (registered in server/hooks.go).
func (d *Dispatcher) WakeHook() ent.Hook {
	return event.AfterCommit(ent.OpCreate, func(context.Context, ent.Mutation) { d.Wake() })
}

// Wake makes the dispatcher look for due deliveries now.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Attempts counts the attempts this dispatcher made.
func (d *Dispatcher) Attempts() int64 { return d.sent.Load() }

// Run sends deliveries until ctx ends, then waits for attempts in flight. Claimed deliveries
// wait in a queue of at most twice the workers, refilled when it falls below the workers, so
// a claim serves many attempts. An attempt cut short by the stop is not counted: its lease is
// released so that the next start (or another instance) sends it.
func (d *Dispatcher) Run(ctx context.Context) {
	ctx = privacy.DecisionContext(ctx, privacy.Allow)
	jobs := make(chan job, 2*d.cfg.Workers)
	done := make(chan struct{}, 1)
	var wg sync.WaitGroup
	for range d.cfg.Workers {
		wg.Go(func() {
			for j := range jobs {
				d.attempt(ctx, j.dl, j.net)
				select {
				case done <- struct{}{}:
				default:
				}
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		if room := cap(jobs) - len(jobs); room >= d.cfg.Workers {
			claimed, err := d.claim(ctx, room)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("claiming webhook deliveries", "err", err)
			}
			for _, dl := range claimed {
				jobs <- dl // never blocks: there is room
			}
			if len(claimed) == room && err == nil {
				// There may be more due: claim again as soon as the queue has room.
				select {
				case <-ctx.Done():
					return
				case <-done:
				}
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-done:
		case <-tick.C:
		}
	}
}

// claim leases up to n due deliveries. On PostgreSQL, FOR UPDATE SKIP LOCKED lets instances
// claim side by side without waiting for or taking each other's rows; SQLite has one
// writer at a time anyway (immediate transactions).
// job is a claimed delivery with its organization's network policy, read at the claim.
type job struct {
	dl  *ent.WebhookDelivery
	net Network
}

func (d *Dispatcher) claim(ctx context.Context, n int) ([]job, error) {
	now := d.now().UTC().Truncate(time.Millisecond)
	tx, err := d.client.Tx(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ids, err := tx.WebhookDelivery.Query().
		Where(
			webhookdelivery.StatusEQ(webhookdelivery.StatusPENDING),
			webhookdelivery.NextAttemptAtLTE(now),
			webhookdelivery.Or(webhookdelivery.LeaseUntilIsNil(), webhookdelivery.LeaseUntilLT(now)),
		).
		Order(webhookdelivery.ByNextAttemptAt()).
		Limit(n).
		Select(webhookdelivery.FieldID).
		Modify(func(s *entsql.Selector) {
			if d.dialect == dialect.Postgres {
				s.ForUpdate(entsql.WithLockAction(entsql.SkipLocked))
			}
		}).
		Strings(ctx)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	lease := now.Add(d.cfg.Lease)
	if err := tx.WebhookDelivery.Update().Where(webhookdelivery.IDIn(ids...)).SetLeaseUntil(lease).Exec(ctx); err != nil {
		return nil, err
	}
	rows, err := tx.WebhookDelivery.Query().Where(webhookdelivery.IDIn(ids...)).WithEndpoint().All(ctx)
	if err != nil {
		return nil, err
	}
	orgIDs := make([]string, 0, len(rows))
	for _, r := range rows {
		orgIDs = append(orgIDs, r.OrgID)
	}
	orgs, err := tx.Organization.Query().Where(organization.IDIn(orgIDs...)).All(ctx)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	nets := make(map[string]Network, len(orgs))
	for _, o := range orgs {
		nets[o.ID] = OrgNetwork(o)
	}
	out := make([]job, len(rows))
	for i, r := range rows {
		out[i] = job{dl: r.Unwrap(), net: nets[r.OrgID]}
	}
	return out, nil
}

// result is what an attempt came to.
type result struct {
	attempt    schematype.WebhookAttempt
	ok         bool
	gone       bool          // 410: the receiver wants no more
	retryAfter time.Duration // the receiver's Retry-After, if any
}

func (d *Dispatcher) attempt(ctx context.Context, dl *ent.WebhookDelivery, net Network) {
	if ctx.Err() != nil {
		d.release(ctx, dl)
		return
	}
	ep := dl.Edges.Endpoint // loaded with the claim
	if ep == nil {
		return // deleted with its deliveries
	}
	if !ep.Active {
		d.finish(dl, ep, nil, "endpoint is not active")
		return
	}
	begun := d.now()
	var res result
	if IsSyslogURL(ep.URL) {
		res = d.sendSyslog(ctx, dl, ep, net)
	} else {
		res = d.send(ctx, dl, ep, net)
	}
	if ctx.Err() != nil { // shutting down: not the receiver's fault; try again at the next start
		d.release(ctx, dl)
		return
	}
	d.sent.Add(1)
	if d.observe != nil {
		outcome := OutcomeSuccess
		switch {
		case res.ok:
		case res.attempt.StatusCode == 0:
			outcome = OutcomeError
		case !res.ok:
			outcome = OutcomeHTTPError
		}
		d.observe(outcome, max(begun.Sub(dl.NextAttemptAt), 0), time.Duration(res.attempt.LatencyMs)*time.Millisecond)
	}
	d.finish(dl, ep, &res, "")
}

// release gives a claimed delivery back without an attempt.
func (d *Dispatcher) release(ctx context.Context, dl *ent.WebhookDelivery) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = d.client.WebhookDelivery.Update().
		Where(webhookdelivery.ID(dl.ID), webhookdelivery.LeaseUntilEQ(*dl.LeaseUntil)).
		ClearLeaseUntil().Exec(bg)
}

// send makes one HTTP attempt through the client of the organization's network policy.
// Failures are stored as a safe message (SafeError); the cause is logged.
func (d *Dispatcher) send(ctx context.Context, dl *ent.WebhookDelivery, ep *ent.WebhookEndpoint, net Network) result {
	start := d.now()
	res := result{attempt: schematype.WebhookAttempt{At: start.UTC().Truncate(time.Millisecond)}}
	failWith := func(msg string, err error) result {
		d.log.Warn("webhook attempt failed", "delivery", dl.ID, "endpoint", ep.ID, "org", dl.OrgID, "error", msg, "cause", err)
		res.attempt.Error = msg
		res.attempt.LatencyMs = d.now().Sub(start).Milliseconds()
		return res
	}
	fail := func(err error) result { return failWith(MsgBuildRequest, err) }
	body, err := Render(string(ep.Format), dl.Payload, RenderOptions{PublicURL: d.cfg.PublicURL})
	if err != nil {
		return fail(err)
	}
	secrets := []string{ep.Secret}
	if ep.PreviousSecret != "" && ep.PreviousSecretExpiresAt != nil && start.Before(*ep.PreviousSecretExpiresAt) {
		secrets = append(secrets, ep.PreviousSecret)
	}
	ts := start.Unix()
	sig, err := Sign(secrets, dl.MessageID, ts, body)
	if err != nil {
		return fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", ContentType(string(ep.Format)))
	req.Header.Set("User-Agent", "Flytrap-Webhooks/1")
	req.Header.Set("webhook-id", dl.MessageID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	if ep.Authorization != "" {
		req.Header.Set("Authorization", ep.Authorization)
	}
	// The address actually connected to (a reused connection too) says whether the answer
	// came from somewhere only an allow-list reaches.
	private := true
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(ci httptrace.GotConnInfo) { private = needsAllowList(ci.Conn.RemoteAddr()) },
	}))
	resp, err := d.clients.get(d.guard(net)).Do(req)
	if err != nil {
		return failWith(SafeError(err), err)
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if private && !net.ShowPrivateResponses {
		excerpt = nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	res.attempt.LatencyMs = d.now().Sub(start).Milliseconds()
	res.attempt.StatusCode = resp.StatusCode
	res.attempt.Response = strings.ToValidUTF8(strings.ReplaceAll(string(excerpt), "\x00", ""), "")
	for !utf8.ValidString(res.attempt.Response) {
		res.attempt.Response = res.attempt.Response[:len(res.attempt.Response)-1]
	}
	res.ok = resp.StatusCode >= 200 && resp.StatusCode < 300
	res.gone = resp.StatusCode == http.StatusGone
	if !res.ok {
		res.attempt.Error = answered(resp.StatusCode)
		res.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), d.now())
	}
	return res
}

// parseRetryAfter reads delay-seconds or an HTTP date; at most a day.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), 24*time.Hour)
}

// finish records an attempt (res nil: none was made, cancelReason says why) and decides
// what comes next, in one transaction with the endpoint's state and any event it causes.
// The update only applies while this instance still holds the lease.
func (d *Dispatcher) finish(dl *ent.WebhookDelivery, ep *ent.WebhookEndpoint, res *result, cancelReason string) {
	ctx, cancel := context.WithTimeout(privacy.DecisionContext(context.Background(), privacy.Allow), 10*time.Second)
	defer cancel()
	if err := d.record(ctx, dl, ep, res, cancelReason); err != nil {
		d.log.Warn("recording a webhook attempt", "delivery", dl.ID, "err", err)
	}
}

func (d *Dispatcher) record(ctx context.Context, dl *ent.WebhookDelivery, ep *ent.WebhookEndpoint, res *result, cancelReason string) error {
	now := d.now().UTC().Truncate(time.Millisecond)
	if res != nil && res.ok && ep.FailingSince == nil {
		// The common case changes the delivery alone: one statement, no transaction.
		return d.client.WebhookDelivery.Update().
			Where(webhookdelivery.ID(dl.ID), webhookdelivery.LeaseUntilEQ(*dl.LeaseUntil)).
			ClearLeaseUntil().SetStatus(webhookdelivery.StatusSUCCEEDED).SetDeliveredAt(now).SetLastError("").
			AddAttemptCount(1).SetLastStatusCode(res.attempt.StatusCode).SetAttempts(append(dl.Attempts, res.attempt)).
			Exec(ctx)
	}
	tx, err := d.client.Tx(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	u := tx.WebhookDelivery.Update().
		Where(webhookdelivery.ID(dl.ID), webhookdelivery.LeaseUntilEQ(*dl.LeaseUntil)).
		ClearLeaseUntil()
	var disable string
	switch {
	case res == nil:
		u.SetStatus(webhookdelivery.StatusFAILED).SetLastError(cancelReason)
	case res.ok:
		u.SetStatus(webhookdelivery.StatusSUCCEEDED).SetDeliveredAt(now).SetLastError("")
	default:
		n := dl.AttemptCount + 1
		switch {
		case res.gone:
			u.SetStatus(webhookdelivery.StatusFAILED)
			disable = "the receiver answered 410 Gone"
		case n > len(d.cfg.Schedule):
			u.SetStatus(webhookdelivery.StatusFAILED)
		default:
			u.SetNextAttemptAt(now.Add(max(jitter(d.cfg.Schedule[n-1]), res.retryAfter)))
		}
		u.SetLastError(res.attempt.Error)
	}
	if res != nil {
		u.AddAttemptCount(1).SetLastStatusCode(res.attempt.StatusCode).
			SetAttempts(append(dl.Attempts, res.attempt))
	}
	n, err := u.Save(ctx)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil // the lease ran out and another instance took the delivery over
	}
	if res != nil {
		epu := tx.WebhookEndpoint.Update().Where(webhookendpoint.ID(ep.ID))
		switch {
		case res.ok && ep.FailingSince != nil:
			epu.ClearFailingSince()
		case res.ok:
			epu = nil
		case ep.FailingSince == nil:
			epu.SetFailingSince(now)
		case now.Sub(*ep.FailingSince) >= d.cfg.DisableAfter && disable == "":
			disable = fmt.Sprintf("failing since %s", event.Seconds(*ep.FailingSince))
			epu = nil
		default:
			epu = nil
		}
		if epu != nil {
			if err := epu.Exec(ctx); err != nil {
				return err
			}
		}
	}
	if disable != "" {
		// Only the change that turns the endpoint off writes the event.
		off, err := tx.WebhookEndpoint.Update().
			Where(webhookendpoint.ID(ep.ID), webhookendpoint.Active(true)).
			SetActive(false).SetDisabledReason(disable).Save(ctx)
		if err != nil {
			return err
		}
		if off > 0 {
			if _, err := event.Append(ctx, tx, ep.OrgID, event.WebhookEndpointDisabled, wire.Object(wire.EndpointDisabled{
				EndpointID: ep.ID, Reason: disable, URL: RedactURL(ep.URL),
			})); err != nil {
				return err
			}
			d.log.Warn("webhook endpoint disabled", "endpoint", ep.ID, "reason", disable)
		}
	}
	return tx.Commit()
}

// jitter spreads a wait by ±20%, so receivers recovering from an outage are not hit all at once.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// RedactURL drops the query and all but the first path segment: Slack and Teams URLs are credentials.
func RedactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	host, path, _ := strings.Cut(rest, "/")
	host, _, _ = strings.Cut(host, "?")
	first, _, _ := strings.Cut(path, "/")
	first, _, _ = strings.Cut(first, "?")
	out := scheme + "://" + host + "/"
	if first != "" {
		out += first + "/…"
	}
	return out
}
