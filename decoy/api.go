package decoy

import (
	"strings"
	"time"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string, escaped like encoding/json (HTML-safe).
func appendJSONString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = append(b, '"')
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[last:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&15])
			}
			i++
			last = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[last:i]...)
			b = append(b, `\ufffd`...)
			i++
			last = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[last:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexd[r&15])
			i += size
			last = i
			continue
		}
		i += size
	}
	b = append(b, s[last:]...)
	return append(b, '"')
}

// js appends s as a JSON string.
func (r *renderer) js(s string) { r.b = appendJSONString(r.b, s) }

// kv appends `"k":` then the string v; a leading comma unless first.
func (r *renderer) kv(k, v string) {
	r.comma()
	r.js(k)
	r.b = append(r.b, ':')
	r.js(v)
}

func (r *renderer) kn(k string, n int) {
	r.comma()
	r.js(k)
	r.b = append(r.b, ':')
	r.int(n)
}

// jkey appends `"k":` for a value the caller writes.
func (r *renderer) jkey(k string) {
	r.comma()
	r.js(k)
	r.b = append(r.b, ':')
}

// comma separates a member or element from the previous one.
func (r *renderer) comma() {
	if n := len(r.b); n > 0 && r.b[n-1] != '{' && r.b[n-1] != '[' {
		r.b = append(r.b, ',')
	}
}

func (r *renderer) jtime(k string, t time.Time) {
	r.jkey(k)
	r.b = append(r.b, '"')
	r.date(t, "2006-01-02T15:04:05Z")
	r.b = append(r.b, '"')
}

// upstreams are the APIs a leaked credential of each style would call.
var upstreams = [...]string{
	"https://api.stripe.com/v1/customers", "https://api.openai.com/v1/chat/completions",
	"https://api.anthropic.com/v1/messages", "https://api.github.com/repos", "https://slack.com/api/chat.postMessage",
}

// Record kinds of the api decoy.
const (
	kindPeople = iota
	kindEmployees
	kindInvoices
	kindKeys
	kindItems
)

func recordKind(topic string) (int, string) {
	switch topic {
	case "customers":
		return kindPeople, "cus"
	case "accounts":
		return kindPeople, "acct"
	case "users", "onboarding":
		return kindPeople, "usr"
	case "vendors":
		return kindPeople, "ven"
	case "payroll":
		return kindEmployees, "emp"
	case "billing", "finance", "pricing":
		return kindInvoices, "in"
	case "keys", "tokens", "settings":
		return kindKeys, "key"
	}
	return kindItems, "itm"
}

// api renders a paginated JSON list with hidden content in its metadata and fields and a
// credential "leaked" in debug output.
func (r *renderer) api() Rendered {
	kind, prefix := recordKind(r.topic)
	link := r.callback(WhereHeader)
	export := r.callback(WhereJSONMeta)
	_, chText := r.challenge(WhereJSONMeta)
	_, _, canText := r.canary(WhereJSONField)
	_, sinkText := r.sink(WhereJSONMeta)
	_, cred, style := r.credential(WhereJSONField)

	path := clean(r.spec.Path, 200)
	if path == "" {
		path = "/"
	}
	n := 8 + r.site.IntN(7)
	noteAt := r.site.IntN(n)
	secretAt := -1
	if kind == kindKeys {
		secretAt = r.site.IntN(n)
	}
	domain := strings.ToLower(strings.ReplaceAll(r.org, " ", "")) + ".com"

	r.w(`{"object":"list","data":[`)
	for i := range n {
		r.comma()
		r.w("{")
		r.jkey("id")
		r.w(`"`, prefix, "_")
		r.alnum(r.site, 14, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0234567")
		r.w(`"`)
		first, last := person(r.site)
		created := r.born.Add(time.Duration(r.site.Int64N(int64(r.made.Sub(r.born)) + 1))) // never after the trap was made
		switch kind {
		case kindPeople:
			r.kv("name", first+" "+last)
			r.kv("email", strings.ToLower(first)+"."+strings.ToLower(last)+"@"+choose(r.site, mailDomains[:]))
			r.kv("plan", choose(r.site, plans[:]))
			r.kv("status", choose(r.site, recordStatuses[:]))
			r.kv("city", choose(r.site, cities[:]))
			r.jkey("mrr_cents")
			r.int((2 + r.site.IntN(400)) * 500)
			r.jtime("created_at", created)
			r.jtime("last_seen_at", r.ago(24*14))
		case kindEmployees:
			r.kv("name", first+" "+last)
			r.kv("email", strings.ToLower(first)+"."+strings.ToLower(last)+"@"+domain)
			r.kv("department", choose(r.site, departments[:]))
			r.jkey("salary")
			r.w("{")
			r.kn("amount", (40+r.site.IntN(90))*1000)
			r.kv("currency", choose(r.site, currencies[:]))
			r.kv("period", "year")
			r.w("}")
			r.jkey("bank_account")
			r.w(`"****`)
			r.alnum(r.site, 4, "0234567")
			r.w(`"`)
			r.kv("status", "active")
			r.jtime("updated_at", r.ago(24*30))
		case kindInvoices:
			r.kv("customer_name", first+" "+last)
			r.jkey("amount_due")
			r.int((5 + r.site.IntN(900)) * 100)
			r.kv("currency", choose(r.site, currencies[:]))
			r.kv("status", [...]string{"paid", "paid", "open", "past_due", "void"}[r.rnd.IntN(5)])
			r.jtime("created_at", created)
			r.jtime("due_date", created.Add(30*24*time.Hour))
		case kindKeys:
			r.kv("name", choose(r.site, services[:])+"-"+[...]string{"ci", "prod", "backup", "etl", "deploy"}[r.site.IntN(5)])
			r.jkey("scopes")
			r.w(`["read"`)
			if r.site.IntN(2) == 0 {
				r.w(`,"write"`)
			}
			r.w("]")
			r.kv("created_by", strings.ToLower(first)+"@"+domain)
			r.jtime("created_at", created)
			if i == secretAt {
				r.kv("secret", cred)
			} else {
				r.jkey("secret_hint")
				r.w(`"`, credentialStyles[r.site.IntN(len(credentialStyles))].prefix, "...")
				r.alnum(r.site, 4, b32Alphabet)
				r.w(`"`)
			}
			r.jtime("last_used_at", r.ago(24*7))
		default:
			r.kv("name", titleCase(r.topic)+" "+choose(r.site, []string{"batch", "report", "sync", "snapshot", "import"}))
			r.kv("owner", first+" "+last)
			r.kv("status", [...]string{"ready", "running", "queued", "failed", "ready"}[r.rnd.IntN(5)])
			r.jtime("created_at", created)
			r.jtime("updated_at", r.ago(24*3))
		}
		if i == noteAt {
			r.kv("notes", canText)
		}
		r.w("}")
	}
	total := n + 20 + r.site.IntN(4000)
	r.w(`],"has_more":true`)
	r.jkey("pagination")
	r.w("{")
	r.kn("page", 1)
	r.kn("per_page", n)
	r.kn("total", total+r.rnd.IntN(5))
	r.jkey("next_cursor")
	r.w(`"`)
	r.alnum(r.rnd, 24, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
	r.w(`"}`)
	r.jkey("links")
	r.w("{")
	r.kv("self", path+"?page=1")
	r.kv("next", path+"?page=2")
	r.kv("export", export.URL)
	r.w("}")
	r.kv("x-agent-instructions", chText)
	r.jkey("_meta")
	r.w("{")
	r.jkey("request_id")
	r.w(`"req_`)
	r.alnum(r.rnd, 20, "abcdefghijklmnopqrstuvwxyz0123456789")
	r.w(`"`)
	r.jtime("generated_at", r.now)
	r.kv("api_version", choose(r.site, []string{"2024-06-20", "2025-02-03", "v1", "2023-08-16"}))
	r.kn("took_ms", 3+r.rnd.IntN(240))
	r.kv("compliance", sinkText)
	r.w("}")
	r.jkey("_debug")
	r.w("{")
	r.kv("upstream", upstreams[style])
	if kind != kindKeys {
		r.kv("authorization", "Bearer "+cred)
	} else {
		r.kv("authorization", "Bearer [redacted]")
	}
	r.kn("retries", r.rnd.IntN(3))
	r.w("}}\n")
	return Rendered{
		Status:      200,
		ContentType: "application/json",
		Header:      map[string]string{"Link": "<" + link.URL + `>; rel="describedby"`},
		Body:        r.b,
	}
}
