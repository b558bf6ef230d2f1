package trap_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/flytrap/flytrap/detect"
	ft "github.com/flytrap/flytrap/flytraptest"
)

// plantedSecrets are every secret the credential decoy plants (decoy/secrets.go, decoy/text.go),
// read from its .env as a client would, with the name CREDENTIAL_USED's detail gives it.
var plantedSecrets = []struct {
	name, detail string
	read         func(t *testing.T, env string) string
}{
	{"API key", "", func(t *testing.T, env string) string {
		for _, line := range strings.Split(env, "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && !strings.HasPrefix(k, "AWS_") && (strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_SECRET_KEY") || strings.HasSuffix(k, "_TOKEN")) {
				return v
			}
		}
		t.Fatalf("no API key in the .env:\n%s", env)
		return ""
	}},
	{"database password", "used the planted database password", func(t *testing.T, env string) string { return urlPassword(t, envValue(t, env, "DATABASE_URL")) }},
	{"Redis password", "used the planted Redis password", func(t *testing.T, env string) string { return urlPassword(t, envValue(t, env, "REDIS_URL")) }},
	{"session secret", "used the planted session secret", func(t *testing.T, env string) string { return envValue(t, env, "SESSION_SECRET") }},
	{"AWS access key id", "used the planted AWS access key", func(t *testing.T, env string) string { return envValue(t, env, "AWS_ACCESS_KEY_ID") }},
	{"AWS secret access key", "used the planted AWS access key", func(t *testing.T, env string) string { return envValue(t, env, "AWS_SECRET_ACCESS_KEY") }},
}

// secretPlaces are every place a client sends a secret: method, path, body and headers.
var secretPlaces = []struct {
	name string
	send func(s string) (method, path, body string, hdr map[string]string)
}{
	{"query string", func(s string) (string, string, string, map[string]string) {
		return http.MethodGet, "/api/v1/check?region=eu-west-1&secret=" + url.QueryEscape(s), "", nil
	}},
	{"query string, unencoded", func(s string) (string, string, string, map[string]string) {
		return http.MethodGet, "/api/v1/check?key=" + strings.ReplaceAll(s, "+", "%2B"), "", nil
	}},
	{"form body", func(s string) (string, string, string, map[string]string) {
		return http.MethodPost, "/login", url.Values{"user": {"admin"}, "password": {s}}.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	}},
	{"JSON body", func(s string) (string, string, string, map[string]string) {
		return http.MethodPost, "/api/v1/connect", `{"name":"backup","credentials":{"secret":"` + strings.ReplaceAll(s, "/", `\/`) + `"}}`, map[string]string{"Content-Type": "application/json"}
	}},
	{"custom header", func(s string) (string, string, string, map[string]string) {
		return http.MethodGet, "/api/v1/me", "", map[string]string{"X-Api-Key": s}
	}},
	{"Authorization Bearer", func(s string) (string, string, string, map[string]string) {
		return http.MethodGet, "/api/v1/me", "", map[string]string{"Authorization": "Bearer " + s}
	}},
	{"cookie", func(s string) (string, string, string, map[string]string) {
		return http.MethodGet, "/admin/", "", map[string]string{"Cookie": "theme=dark; session=" + s + "; lang=en"}
	}},
	{"multipart form", func(s string) (string, string, string, map[string]string) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		_ = w.WriteField("user", "admin")
		_ = w.WriteField("secret", s)
		_ = w.Close()
		return http.MethodPost, "/upload", b.String(), map[string]string{"Content-Type": w.FormDataContentType()}
	}},
}

// TestEveryPlantedSecretEverywhere sends every planted secret in every place through the
// real listener and database (issue 24 item 5): each fires CREDENTIAL_USED naming the
// secret, a curl user of it is a malicious BOT (high), and a secret of nobody's in the
// same place fires nothing.
func TestEveryPlantedSecretEverywhere(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		c := newCorpus(t, b)
		n := 0
		for _, sec := range plantedSecrets {
			for _, pl := range secretPlaces {
				n++
				v := c.visitor(sec.name+" in a "+pl.name, uaCurl, fmt.Sprintf("198.18.%d.%d", n/200, n%200+1), want{is: isBot, class: detect.ClassBot,
					signals: []string{detect.SignalCredentialUsed}, severities: []string{"high"}, event: true})
				secret := sec.read(t, v.get(t, "/config/.env.production").body)
				method, path, body, hdr := pl.send(secret)
				v.do(t, method, path, body, hdr)
				s := v.check(t)
				found := false
				for _, sg := range s.Signals {
					found = found || sg.Name == detect.SignalCredentialUsed && (sec.detail == "" || sg.Detail == sec.detail)
				}
				if !found {
					t.Errorf("%s: no CREDENTIAL_USED %q: %+v", v.name, sec.detail, s.Signals)
				}
			}
		}
		// Look-alikes of nobody's in the same places: AWS's documentation pair, a random
		// key of the same shape. A stranger's request carrying them is not even recorded.
		for i, fake := range []string{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AKIAIOSFODNN7EXAMPLE", "sk_live_51HxQ2bKfake0000000000000000000"} {
			for j, pl := range secretPlaces {
				v := &visitor{c: c, name: "look-alike", ua: uaCurl, ip: fmt.Sprintf("198.18.9.%d", i*20+j+1), tally: &tally{}}
				method, path, body, hdr := pl.send(fake)
				v.do(t, method, path, body, hdr)
				if ss := c.sessionsOf(t, v.ip, v.ua); len(ss) != 0 {
					t.Errorf("%q in a %s made a session: %+v", fake, pl.name, ss[0].SignalsFired)
				}
			}
		}
	})
}
