package rest_test

import (
	"net/http"
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
)

// webhookPath fills the webhook routes' path parameters with well-formed ids of no endpoint.
func webhookPath(path string) string {
	if !strings.HasPrefix(path, "/dashboard/api/webhooks") {
		return path
	}
	path = strings.Replace(path, "/webhooks//", "/webhooks/{id}/", 1)
	if strings.HasSuffix(path, "/webhooks/") {
		path += "{id}"
	}
	path = strings.ReplaceAll(path, "{id}", "whk_01m817pg1f8bjdanzx5g71dpy4")
	path = strings.ReplaceAll(path, "trp_01m817pg1f8bjdanzx5g71dpy4", "whk_01m817pg1f8bjdanzx5g71dpy4")
	return strings.ReplaceAll(path, "{delivery_id}", "dlv_01m817pg1f8bjdanzx5g71dpy4")
}

// exerciseWebhooks calls every webhook route with each answer the document declares for it.
func exerciseWebhooks(t *testing.T, c *conformance, env *ft.Env, a, other ft.Tenant) {
	t.Helper()
	const (
		list     = "/dashboard/api/webhooks"
		byID     = "/dashboard/api/webhooks/{id}"
		rotate   = "/dashboard/api/webhooks/{id}/rotate-secret"
		ping     = "/dashboard/api/webhooks/{id}/ping"
		dels     = "/dashboard/api/webhooks/{id}/deliveries"
		redelive = "/dashboard/api/webhooks/{id}/deliveries/{delivery_id}/redeliver"
	)
	rq := func(method, tmpl, path, token, body string) request {
		return request{method: method, tmpl: tmpl, path: path, token: token, body: body}
	}
	created := dataOf(c.call(env, http.StatusCreated, rq("POST", list, list, a.ReadWrite,
		`{"url":"https://siem.example.com/hook","description":"SOC","event_types":["threat.*"],"format":"splunk_hec","throttle_minutes":10,"authorization":"Splunk abc"}`)))
	id := created["id"].(string)
	if !strings.HasPrefix(created["secret"].(string), "whsec_") {
		t.Fatalf("create answered no secret: %v", created)
	}
	mine := list + "/" + id
	theirs := dataOf(c.call(env, http.StatusCreated, rq("POST", list, list, other.ReadWrite, `{"url":"https://example.org/x"}`)))["id"].(string)
	for _, body := range []string{`{}`, `{"url":"ftp://x"}`, `{"url":"https://x","format":"xml"}`, `{"url":"https://x","event_types":["nope"]}`, `{"url":"https://x","bogus":1}`} {
		c.call(env, http.StatusBadRequest, rq("POST", list, list, a.ReadWrite, body))
	}
	c.call(env, http.StatusForbidden, rq("POST", list, list, a.ReadOnly, `{"url":"https://x.example"}`))
	huge := `{"url":"https://x.example","description":"` + strings.Repeat("a", int(env.Config.MaxBodyBytes)) + `"}`
	c.call(env, http.StatusRequestEntityTooLarge, rq("POST", list, list, a.ReadWrite, huge))
	c.call(env, http.StatusRequestEntityTooLarge, rq("PATCH", byID, mine, a.ReadWrite, huge))
	if l := c.call(env, http.StatusOK, rq("GET", list, list, a.ReadWrite, "")); len(l["data"].([]any)) != 1 {
		t.Fatalf("webhook list %v, want 1", l)
	}
	c.call(env, http.StatusForbidden, rq("GET", list, list, a.ReadOnly, ""))
	got := dataOf(c.call(env, http.StatusOK, rq("GET", byID, mine, a.ReadWrite, "")))
	if _, leaked := got["secret"]; leaked || got["authorization"] != nil {
		t.Fatalf("GET shows a secret: %v", got)
	}
	c.call(env, http.StatusForbidden, rq("GET", byID, mine, a.ReadOnly, ""))
	c.call(env, http.StatusNotFound, rq("GET", byID, list+"/"+theirs, a.ReadWrite, ""))
	c.call(env, http.StatusBadRequest, rq("GET", byID, list+"/trp_01m817pg1f8bjdanzx5g71dpy4", a.ReadWrite, ""))
	c.call(env, http.StatusOK, rq("PATCH", byID, mine, a.ReadWrite, `{"description":"SOC (EU)","active":true}`))
	for _, body := range []string{`{}`, `{"format":"xml"}`, `{"throttle_minutes":-1}`} {
		c.call(env, http.StatusBadRequest, rq("PATCH", byID, mine, a.ReadWrite, body))
	}
	c.call(env, http.StatusNotFound, rq("PATCH", byID, list+"/"+theirs, a.ReadWrite, `{"description":"mine"}`))
	c.call(env, http.StatusForbidden, rq("PATCH", byID, mine, a.ReadOnly, `{"description":"x"}`))
	rot := dataOf(c.call(env, http.StatusOK, rq("POST", rotate, mine+"/rotate-secret", a.ReadWrite, "")))
	if rot["secret"] == created["secret"] || rot["previous_secret_expires_at"] == nil {
		t.Fatalf("rotation %v", rot)
	}
	c.call(env, http.StatusNotFound, rq("POST", rotate, list+"/"+theirs+"/rotate-secret", a.ReadWrite, ""))
	c.call(env, http.StatusForbidden, rq("POST", rotate, mine+"/rotate-secret", a.ReadOnly, ""))
	c.call(env, http.StatusBadRequest, rq("POST", rotate, list+"/nope/rotate-secret", a.ReadWrite, ""))
	d := dataOf(c.call(env, http.StatusAccepted, rq("POST", ping, mine+"/ping", a.ReadWrite, "")))
	c.call(env, http.StatusNotFound, rq("POST", ping, list+"/"+theirs+"/ping", a.ReadWrite, ""))
	c.call(env, http.StatusForbidden, rq("POST", ping, mine+"/ping", a.ReadOnly, ""))
	c.call(env, http.StatusBadRequest, rq("POST", ping, list+"/nope/ping", a.ReadWrite, ""))
	c.call(env, http.StatusOK, rq("GET", dels, mine+"/deliveries?limit=10&status=pending", a.ReadWrite, ""))
	for _, bad := range []string{"limit=0", "status=lost", "cursor=zzz", "bogus=1"} {
		c.call(env, http.StatusBadRequest, rq("GET", dels, mine+"/deliveries?"+bad, a.ReadWrite, ""))
	}
	c.call(env, http.StatusNotFound, rq("GET", dels, list+"/"+theirs+"/deliveries", a.ReadWrite, ""))
	c.call(env, http.StatusForbidden, rq("GET", dels, mine+"/deliveries", a.ReadOnly, ""))
	again := mine + "/deliveries/" + d["id"].(string) + "/redeliver"
	c.call(env, http.StatusAccepted, rq("POST", redelive, again, a.ReadWrite, ""))
	c.call(env, http.StatusForbidden, rq("POST", redelive, again, a.ReadOnly, ""))
	c.call(env, http.StatusNotFound, rq("POST", redelive, mine+"/deliveries/dlv_01m817pg1f8bjdanzx5g71dpy4/redeliver", a.ReadWrite, ""))
	c.call(env, http.StatusBadRequest, rq("POST", redelive, mine+"/deliveries/nope/redeliver", a.ReadWrite, ""))
	c.call(env, http.StatusOK, rq("PATCH", byID, mine, a.ReadWrite, `{"active":false}`))
	c.call(env, http.StatusConflict, rq("POST", redelive, again, a.ReadWrite, ""))
	c.call(env, http.StatusForbidden, rq("DELETE", byID, mine, a.ReadOnly, ""))
	c.call(env, http.StatusOK, rq("DELETE", byID, mine, a.ReadWrite, ""))
	c.call(env, http.StatusNotFound, rq("DELETE", byID, mine, a.ReadWrite, ""))
}
