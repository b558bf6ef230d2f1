package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flytrap/flytrap/ent/sequence"
	"github.com/flytrap/flytrap/ent/webhookdelivery"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/viewer"
	"github.com/flytrap/flytrap/webhook"
)

const (
	pingQ      = `mutation($id: ID!) { pingWebhookEndpoint(id: $id) { id } }`
	redeliverQ = `mutation($id: ID!) { redeliverWebhook(deliveryID: $id) { id } }`
	attemptsQ  = `query($id: ID!) { webhookDeliveries(endpointID: $id, first: 50) { edges { node { id status lastError attempts { statusCode error response } } } } }`
)

// strict is fast with no instance-wide allow-list: what an organization may reach is its own.
func strict(cfg *server.Config) {
	fast(cfg)
	cfg.Webhook.AllowPrivate = false
}

// seen is every text a tenant can read about an endpoint's deliveries: GraphQL and REST.
func seen(t *testing.T, env *ft.Env, token, ep string) string {
	t.Helper()
	g := env.MustGraphQL(token, attemptsQ, map[string]any{"id": ep})
	gj, _ := json.Marshal(g)
	res, body := env.Get(token, "/dashboard/api/webhooks/"+ep+"/deliveries?limit=50")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("REST deliveries: %d %s", res.StatusCode, body)
	}
	return string(gj) + "\n" + string(body)
}

// The operator allows one organization a private network: the other is still refused, at the
// dial, including through a name that resolves there and over a connection the allowed one
// left open; the allowed one's answers stay hidden until it is opted in.
func TestNetworkPerOrganization(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, strict)
		sys := ft.System()
		a, bt := env.Tenant("alpha"), env.Tenant("beta")
		const answer = "internal-only answer 7f3a"
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) { w.Write([]byte(answer)) })
		env.DB.Client.Organization.UpdateOne(bt.Org).SetWebhookAllowCidrs([]string{"127.0.0.0/8"}).ExecX(sys)

		// B first, so that a kept-alive connection to the receiver exists when A tries.
		epB, _ := createEndpoint(t, env, bt.ReadWrite, map[string]any{"url": rc.URL + "/b"})
		env.MustGraphQL(bt.ReadWrite, pingQ, map[string]any{"id": epB})
		waitFor(t, "B's ping", settled(t, env, epB, 1))
		d := deliveries(t, env, epB)[0]
		if d.Status != webhookdelivery.StatusSUCCEEDED || len(rc.got()) != 1 {
			t.Fatalf("B's ping: %s, %d requests, %+v", d.Status, len(rc.got()), d.Attempts)
		}
		if d.Attempts[0].Response != "" || strings.Contains(seen(t, env, bt.ReadWrite, epB), answer) {
			t.Fatalf("the answer of an allow-listed address is shown without the opt-in: %+v", d.Attempts)
		}

		for _, url := range []string{rc.URL + "/a", strings.Replace(rc.URL, "127.0.0.1", "localhost", 1) + "/a"} {
			epA, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": url})
			env.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": epA})
			waitFor(t, "A's ping", settled(t, env, epA, 1))
			d := deliveries(t, env, epA)[0]
			if d.Status != webhookdelivery.StatusFAILED || d.Attempts[0].Error != webhook.MsgNotAllowed || d.LastError != webhook.MsgNotAllowed {
				t.Fatalf("A's ping to %s: %s %+v", url, d.Status, d.Attempts)
			}
			if shown := seen(t, env, a.ReadWrite, epA); strings.Contains(shown, "127.0.0.1") || strings.Contains(shown, "dial") {
				t.Fatalf("A is shown an address or a dial error: %s", shown)
			}
		}
		for _, r := range rc.got() {
			if !strings.HasSuffix(r.header.Get("User-Agent"), "/1") || strings.Contains(string(r.body), a.Org.ID) {
				t.Fatalf("A's delivery reached the receiver: %s", r.body)
			}
		}
		if len(rc.got()) != 1 {
			t.Fatalf("receiver got %d requests, want B's one", len(rc.got()))
		}

		// Opted in, B sees the answers of later attempts.
		env.DB.Client.Organization.UpdateOne(bt.Org).SetWebhookShowPrivateResponses(true).ExecX(sys)
		env.MustGraphQL(bt.ReadWrite, pingQ, map[string]any{"id": epB})
		waitFor(t, "B's second ping", settled(t, env, epB, 2))
		if shown := seen(t, env, bt.ReadWrite, epB); strings.Count(shown, answer) != 2 { // once in GraphQL, once in REST
			t.Fatalf("opted-in answer shown %d times, want 2: %s", strings.Count(shown, answer), shown)
		}
	})
}

// The instance-wide flags still allow every organization, but an answer from an address that
// needed them is not kept unless the organization opted in.
func TestInstanceAllowListHidesAnswers(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast) // --webhook-allow-private
		a := env.Tenant("alpha")
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
			http.Error(w, "secret from the intranet", http.StatusTeapot)
		})
		ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL})
		env.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep})
		waitFor(t, "the first attempt", func() bool {
			ds := deliveries(t, env, ep)
			return len(ds) == 1 && len(ds[0].Attempts) > 0
		})
		at := deliveries(t, env, ep)[0].Attempts[0]
		if at.StatusCode != http.StatusTeapot || at.Response != "" || at.Error != "the receiver answered 418 I'm a teapot" {
			t.Fatalf("attempt %+v", at)
		}
		if shown := seen(t, env, a.ReadWrite, ep); strings.Contains(shown, "intranet") {
			t.Fatalf("shown: %s", shown)
		}
	})
}

// A tenant cannot give itself a network: the fields are not in the API, and the storage refuses them.
func TestNetworkIsOperatorOnly(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], strict)
	a := env.Tenant("alpha")
	for _, q := range []string{
		`mutation { updateOrganization(input: {webhookAllowPrivate: true}) { id } }`,
		`mutation { updateOrganization(input: {webhookAllowCidrs: ["10.0.0.0/8"]}) { id } }`,
		`{ organization { webhookAllowPrivate } }`,
	} {
		if r := env.GraphQL(a.Admin, q, nil); r.Code() != "BAD_USER_INPUT" && r.Code() != "GRAPHQL_VALIDATION_FAILED" {
			t.Fatalf("%s: %s", q, r.Raw)
		}
	}
	ctx := viewer.NewContext(context.Background(), viewer.Viewer{OrgID: a.Org.ID, Scope: viewer.Admin})
	err := env.DB.Client.Organization.UpdateOneID(a.Org.ID).SetWebhookAllowPrivate(true).Exec(ctx)
	if err == nil || !strings.Contains(err.Error(), "operator") {
		t.Fatalf("a tenant set its network: %v", err)
	}
	if o := env.DB.Client.Organization.GetX(ft.System(), a.Org.ID); o.WebhookAllowPrivate {
		t.Fatal("stored")
	}
}

// Failed attempts are stored and shown as a stable message, never the dial error with its
// addresses or the resolver's.
func TestSafeAttemptErrors(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		a := env.Tenant("alpha")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := l.Addr().String()
		l.Close()
		for url, want := range map[string]string{
			"http://" + closed + "/hook":       webhook.MsgRefused,
			"http://flytrap-test.invalid/hook": webhook.MsgNotFound,
		} {
			ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": url})
			env.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep})
			waitFor(t, "the first attempt", func() bool {
				ds := deliveries(t, env, ep)
				return len(ds) == 1 && len(ds[0].Attempts) > 0
			})
			d := deliveries(t, env, ep)[0]
			if d.Attempts[0].Error != want || d.LastError != want {
				t.Errorf("%s: error %q (last %q), want %q", url, d.Attempts[0].Error, d.LastError, want)
			}
			shown := seen(t, env, a.ReadWrite, ep)
			for _, leak := range []string{"dial", "lookup", closed, "Post "} {
				if strings.Contains(shown, leak) {
					t.Errorf("%s: shown %q: %s", url, leak, shown)
				}
			}
			// A resolver's or receiver's address (timestamps have colons too, never dots before them).
			if addr := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`).FindString(shown); addr != "" {
				t.Errorf("%s: shown the address %s: %s", url, addr, shown)
			}
		}
	})
}

func TestSafeError(t *testing.T) {
	opErr := func(err error) error {
		return fmt.Errorf("Post \"http://x/\": %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", err)})
	}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{opErr(syscall.ECONNREFUSED), webhook.MsgRefused},
		{opErr(syscall.ECONNRESET), webhook.MsgReset},
		{opErr(syscall.EHOSTUNREACH), webhook.MsgUnreachable},
		{&net.DNSError{Err: "no such host", Name: "x", Server: "127.0.0.53:53", IsNotFound: true}, webhook.MsgNotFound},
		{&net.DNSError{Err: "i/o timeout", Name: "x", Server: "127.0.0.53:53", IsTimeout: true}, webhook.MsgTimeout},
		{&net.DNSError{Err: "server misbehaving", Name: "x", Server: "127.0.0.53:53"}, webhook.MsgLookup},
		{fmt.Errorf("dial: %w: 10.0.0.5", webhook.ErrForbiddenAddress), webhook.MsgNotAllowed},
		{context.DeadlineExceeded, webhook.MsgTimeout},
		{errors.New("something new from the library, 10.0.0.5:443"), webhook.MsgConnection},
	} {
		if got := webhook.SafeError(tt.err); got != tt.want {
			t.Errorf("SafeError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// Pings and redeliveries make the service send requests: each endpoint gets a burst, then
// 429 with Retry-After on REST and RATE_LIMITED with retryAfter on GraphQL, for both mutations.
func TestManualDeliveriesRateLimited(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		env := ft.Start(t, b, fast)
		sys := ft.System()
		a := env.Tenant("alpha")
		rc := newReceiver(t, nil)
		ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL})
		other, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL})
		restPing := func(id string) *http.Response {
			req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/dashboard/api/webhooks/"+id+"/ping", nil)
			req.Header.Set("Authorization", "Bearer "+a.ReadWrite)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res
		}
		burst := env.Config.WebhookManual.Burst
		var first string
		for i := range burst {
			d := env.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep})
			if i == 0 {
				first = ft.Dig(d, "pingWebhookEndpoint", "id").(string)
			}
		}
		for _, r := range []ft.Response{
			env.GraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep}),
			env.GraphQL(a.ReadWrite, redeliverQ, map[string]any{"id": first}),
		} {
			if r.Code() != "RATE_LIMITED" {
				t.Fatalf("over the burst: %s", r.Raw)
			}
			if s, _ := r.Errors[0].Extensions["retryAfter"].(float64); s < 1 || s > 60 {
				t.Fatalf("retryAfter %v: %s", r.Errors[0].Extensions["retryAfter"], r.Raw)
			}
		}
		res := restPing(ep)
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); res.StatusCode != http.StatusTooManyRequests || err != nil || s < 1 || s > 60 {
			t.Fatalf("REST ping over the burst: %d, Retry-After %q", res.StatusCode, res.Header.Get("Retry-After"))
		}
		req, _ := http.NewRequest(http.MethodPost, env.HTTP.URL+"/dashboard/api/webhooks/"+ep+"/deliveries/"+first+"/redeliver", nil)
		req.Header.Set("Authorization", "Bearer "+a.ReadWrite)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("REST redeliver over the burst: %d", res.StatusCode)
		}
		if n := len(deliveries(t, env, ep)); n != burst {
			t.Fatalf("%d deliveries queued, want %d", n, burst)
		}
		// Another endpoint has its own allowance.
		if res := restPing(other); res.StatusCode != http.StatusAccepted {
			t.Fatalf("other endpoint: %d", res.StatusCode)
		}
		// Once the allowance is back (the stored arrival time in the past), pings go through again.
		env.DB.Client.Sequence.Update().Where(sequence.ID("webhook-manual:" + ep)).SetValue(0).ExecX(sys)
		env.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep})
		// Deleting the endpoint drops its limiter row.
		env.MustGraphQL(a.ReadWrite, `mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { deleted } }`, map[string]any{"id": ep})
		if n := env.DB.Client.Sequence.Query().Where(sequence.ID("webhook-manual:" + ep)).CountX(sys); n != 0 {
			t.Fatalf("limiter row left behind")
		}
	})
}

// Instances on one database share an endpoint's allowance.
func TestManualLimitSharedByInstances(t *testing.T) {
	dsn := ft.PostgresDSN(t)
	one := ft.StartOn(t, dsn, fast)
	two := ft.StartOn(t, dsn, fast)
	a := one.Tenant("alpha")
	rc := newReceiver(t, nil)
	ep, _ := createEndpoint(t, one, a.ReadWrite, map[string]any{"url": rc.URL})
	for range one.Config.WebhookManual.Burst {
		one.MustGraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep})
	}
	if r := two.GraphQL(a.ReadWrite, pingQ, map[string]any{"id": ep}); r.Code() != "RATE_LIMITED" {
		t.Fatalf("second instance: %s", r.Raw)
	}
}
