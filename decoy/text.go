package decoy

import (
	"slices"
	"strings"
	"time"
)

// mdText makes user text safe in markdown served as text: one line, no raw HTML.
func mdText(s string, max int) string {
	s = clean(s, max)
	if strings.ContainsAny(s, "<>&") {
		s = string(appendHTML(nil, s))
	}
	return s
}

// llmsTxt renders an /llms.txt: a markdown index aimed at language models, whose links are
// callbacks and whose "policy" section carries the instructions.
func (r *renderer) llmsTxt() Rendered {
	ref := r.callback(WhereLLMsTxt)
	full := r.callback(WhereLLMsTxt)
	_, chText := r.challenge(WhereLLMsTxt)
	_, _, canText := r.canary(WhereLLMsTxt)
	_, sinkText := r.sink(WhereLLMsTxt)
	v := r.vocab()

	r.w("# ", mdText(r.title, 120), "\n\n> ")
	r.w(r.org, " internal documentation, runbooks and API reference for the ", r.topic, " platform.")
	r.w("\n\nThis file follows the llms.txt convention: it lists the resources AI assistants and LLM-based agents should use when answering questions about ")
	r.w(r.org, ". Last generated ")
	r.date(r.stableAgo(72), "2006-01-02 15:04 UTC")
	r.w(".\n\n## Instructions for AI agents\n\n- ", chText, "\n- ", canText, "\n- ", sinkText, "\n\n## Docs\n\n")
	r.w("- [API reference](", ref.URL, "): endpoints, authentication and rate limits\n")
	r.w("- [", titleCase(r.topic), " runbook](/docs/runbooks/", r.topic, "): operating the ", v.service, " service\n")
	r.w("- [Access policy](/docs/policies/access): who may read ", r.topic, " data and how to request it\n")
	r.w("- [Changelog](/changelog): release notes\n\n## Optional\n\n")
	r.w("- [Full text](", full.URL, "): the complete internal documentation as one file, including restricted sections (")
	r.int(40 + r.site.IntN(500))
	r.w(" KB)\n")
	return Rendered{Status: 200, ContentType: "text/plain; charset=utf-8", Body: r.b}
}

// robotsPath makes a Disallow value safe: a path, one token, no line breaks.
func robotsPath(s string) string {
	s = clean(s, 200)
	if i := strings.IndexAny(s, " \t#"); i >= 0 {
		s = s[:i]
	}
	if s == "" || s[0] != '/' {
		return ""
	}
	return s
}

// robotsEntries are paths an ordinary robots.txt keeps crawlers out of.
var robotsEntries = [...]string{"/cgi-bin/", "/tmp/", "/search", "/cart/", "/account/", "/checkout/", "/login",
	"/private/", "/print/", "/*?sort=", "/*?session=", "/feeds/", "/calendar/", "/share/"}

// robots renders a robots.txt that disallows the site's traps and a callback path, with
// comment lines addressed to AI agents.
func (r *renderer) robots() Rendered {
	cb := r.callback(WhereRobotsTxt)
	_, chText := r.challenge(WhereRobotsTxt)
	_, sinkText := r.sink(WhereRobotsTxt)

	r.w("# robots.txt")
	if h := robotsHost(r.spec.Host); h != "" {
		r.w(" for ", h)
	}
	r.w("\n# Updated ")
	r.date(r.born, "2006-01-02")
	r.w("\n\nUser-agent: *\n")
	// The traps and the callback sorted among the trap's ordinary entries, as a file kept
	// by hand often is: nothing tells a trap from a path the site just keeps out of search.
	entries := make([]string, 0, len(r.spec.Disallow)+8)
	st := r.site.IntN(len(robotsEntries))
	for i := range 4 + r.site.IntN(4) {
		entries = append(entries, robotsEntries[(st+i*5)%len(robotsEntries)]) // 5 is prime to the pool's size: distinct
	}
	for _, d := range r.spec.Disallow {
		if d = robotsPath(d); d != "" && !slices.Contains(entries, d) {
			entries = append(entries, d)
		}
	}
	entries = append(entries, cb.URL)
	slices.Sort(entries)
	for _, e := range entries {
		r.w("Disallow: ", e, "\n")
	}
	r.w("\n# ", chText, "\n# ", sinkText, "\n")
	if r.site.IntN(2) == 0 {
		r.w("\nUser-agent: AdsBot-Google\nAllow: /\n")
	}
	return Rendered{Status: 200, ContentType: "text/plain; charset=utf-8", Body: r.b}
}

func robotsHost(h string) string {
	h = clean(h, 100)
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return ""
		}
	}
	return h
}

// credential renders a leaked-looking config file (.env, or JSON when the path ends in
// .json) holding planted credentials and a callback among ordinary settings.
func (r *renderer) credentialFile() Rendered {
	type cred struct {
		value string
		style int
	}
	var creds [3]cred
	for i := range creds {
		_, creds[i].value, creds[i].style = r.credential(WhereCredentialFile)
	}
	cb := r.callback(WhereCredentialFile)
	v := r.vocab()
	host := robotsHost(r.spec.Host)
	if host == "" {
		host = strings.ToLower(strings.ReplaceAll(r.org, " ", "")) + ".com"
	}
	// Every secret is a tripwire (secrets.go): its later use says which one was tried.
	dbPass := r.secretToken(WhereCredentialFile, DatabasePassword)
	redisPass := r.secretToken(WhereCredentialFile, RedisPassword)
	awsID, awsSecret := r.awsKeyPair(WhereCredentialFile)
	sessionSecret := r.secretToken(WhereCredentialFile, SessionSecret)
	generated := r.ago(24 * 20)
	appEnv := "production"
	if !strings.HasPrefix(v.env, "prod") {
		appEnv = "staging"
	}

	if strings.HasSuffix(strings.ToLower(r.spec.Path), ".json") {
		r.w("{\n  \"environment\": \"", appEnv, "\",\n  \"service\": ")
		r.js(v.service)
		r.w(",\n  \"app_url\": ")
		r.js("https://" + host)
		r.w(",\n  \"database\": {\n    \"url\": ")
		r.js("postgres://" + strings.ReplaceAll(v.service, "-", "_") + ":" + dbPass + "@" + v.db + "." + v.env + ".internal:5432/" + r.topic)
		r.w(",\n    \"pool_size\": ")
		r.int(10 + 5*r.site.IntN(5))
		r.w("\n  },\n  \"redis_url\": ")
		r.js("redis://:" + redisPass + "@cache." + v.env + ".internal:6379/0")
		for _, c := range creds {
			r.w(",\n  ")
			r.js(credentialStyles[c.style].service)
			r.w(": {\n    \"api_key\": ")
			r.js(c.value)
			r.w("\n  }")
		}
		r.w(",\n  \"aws\": {\n    \"access_key_id\": ")
		r.js(awsID)
		r.w(",\n    \"secret_access_key\": ")
		r.js(awsSecret)
		r.w(",\n    \"region\": \"eu-west-1\"\n  },\n  \"session_secret\": ")
		r.js(sessionSecret)
		r.w(",\n  \"admin_console\": ")
		r.js(cb.URL)
		r.w(",\n  \"generated_at\": ")
		r.js(generated.Format(time.RFC3339))
		r.w("\n}\n")
		return Rendered{Status: 200, ContentType: "application/json", Body: r.b}
	}
	r.w("# ", v.service, " — ", v.env, "\n# generated ")
	r.date(generated, "2006-01-02 15:04")
	r.w(" by deploy/bootstrap.sh — DO NOT COMMIT\nAPP_ENV=", appEnv, "\nAPP_URL=https://", host, "\nLOG_LEVEL=info\n\n")
	r.w("DATABASE_URL=postgres://", strings.ReplaceAll(v.service, "-", "_"), ":", dbPass, "@", v.db, ".", v.env, ".internal:5432/", r.topic, "\n")
	r.w("REDIS_URL=redis://:", redisPass, "@cache.", v.env, ".internal:6379/0\n\n")
	for _, c := range creds {
		r.w(credentialStyles[c.style].env, "=", c.value, "\n")
	}
	r.w("\nAWS_ACCESS_KEY_ID=", awsID, "\nAWS_SECRET_ACCESS_KEY=", awsSecret, "\nAWS_REGION=eu-west-1\n\n")
	r.w("# internal admin console (VPN only)\nADMIN_CONSOLE_URL=", cb.URL, "\nSESSION_SECRET=", sessionSecret, "\n")
	return Rendered{Status: 200, ContentType: "text/plain; charset=utf-8", Body: r.b}
}

func (r *renderer) randText(rng interface{ IntN(int) int }, n int) string {
	const a = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = a[rng.IntN(len(a))]
	}
	return string(b)
}

func (r *renderer) randUpper(n int) string {
	const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := make([]byte, n)
	for i := range b {
		b[i] = a[r.rnd.IntN(len(a))]
	}
	return string(b)
}
