package webhook_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	syslog "github.com/leodido/go-syslog/v4"
	"github.com/leodido/go-syslog/v4/octetcounting"
	"github.com/leodido/go-syslog/v4/rfc5424"

	"github.com/flytrap/flytrap/ent/webhookdelivery"
	"github.com/flytrap/flytrap/event"
	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/server"
	"github.com/flytrap/flytrap/webhook"
)

// rsyslogd finds Debian's rsyslogd, or skips: CI installs it (scripts/install-rsyslog.sh).
func rsyslogd(t *testing.T) string {
	for _, p := range []string{"/usr/sbin/rsyslogd", "/sbin/rsyslogd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("rsyslogd"); err == nil {
		return p
	}
	ft.Skip(t, "syslog into rsyslog", "bash scripts/install-rsyslog.sh (Debian's rsyslog and rsyslog-gnutls)", "rsyslogd is not installed")
	return ""
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// testCA writes a CA and a server certificate for 127.0.0.1 and localhost into dir; it
// answers the CA's pool for the dispatcher.
func testCA(t *testing.T, dir string) *x509.CertPool {
	writePEM := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flytrap test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(srvKey)
	writePEM("ca.pem", "CERTIFICATE", caDER)
	writePEM("server.pem", "CERTIFICATE", srvDER)
	writePEM("server.key", "PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool
}

// startRsyslog runs rsyslogd in the foreground with a TCP and a TLS (gtls) listener, each
// writing what it parsed (facility, severity, timestamp, hostname, app-name, msgid, input,
// message), tab-separated, one line per message, to out.log in dir.
func startRsyslog(t *testing.T, bin, dir string) (tcpPort, tlsPort int, out string) {
	tcpPort, tlsPort = freePort(t), freePort(t)
	out = filepath.Join(dir, "out.log")
	conf := fmt.Sprintf(`global(workDirectory=%[1]q maxMessageSize="16k"
  DefaultNetstreamDriverCAFile=%[2]q DefaultNetstreamDriverCertFile=%[3]q DefaultNetstreamDriverKeyFile=%[4]q)
module(load="imtcp")
template(name="fields" type="list") {
  property(name="syslogfacility") constant(value="\t") property(name="syslogseverity") constant(value="\t")
  property(name="timereported" dateFormat="rfc3339") constant(value="\t") property(name="hostname") constant(value="\t")
  property(name="app-name") constant(value="\t") property(name="msgid") constant(value="\t")
  property(name="$!input") constant(value="\t") property(name="msg" droplastlf="on") constant(value="\n")
}
ruleset(name="plain") { set $!input = "tcp"; action(type="omfile" file=%[5]q template="fields") }
ruleset(name="tls") { set $!input = "tls"; action(type="omfile" file=%[5]q template="fields") }
input(type="imtcp" port="%[6]d" address="127.0.0.1" ruleset="plain")
input(type="imtcp" port="%[7]d" address="127.0.0.1" ruleset="tls" streamDriver.name="gtls" streamDriver.mode="1" streamDriver.authMode="anon")
`, dir, filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), out, tcpPort, tlsPort)
	confPath := filepath.Join(dir, "rsyslog.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	cmd := exec.Command(bin, "-n", "-f", confPath, "-i", filepath.Join(dir, "rsyslogd.pid"))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("rsyslogd said:\n%s", logs.String())
		}
	})
	for _, p := range []int{tcpPort, tlsPort} {
		waitFor(t, "rsyslogd to listen", func() bool {
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	return tcpPort, tlsPort, out
}

// Threat and trap events reach Debian's rsyslog as RFC 5424 syslog with CEF payloads, over
// TCP and over TLS (the receiver's certificate verified against --webhook-ca-file's CA),
// octet-counted; rsyslog parses every header field, and the CEF fields carry the event.
func TestSyslogIntoRsyslog(t *testing.T) {
	bin := rsyslogd(t)
	dir := t.TempDir()
	roots := testCA(t, dir)
	tcpPort, tlsPort, out := startRsyslog(t, bin, dir)
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		// rsyslog keeps out.log open: each backend's messages are told apart by their session.
		sid := "ses_" + b.Name
		env := ft.Start(t, b, func(cfg *server.Config) {
			fast(cfg)
			cfg.Webhook.RootCAs = roots
		})
		a := env.Tenant("acme")
		overTCP, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": fmt.Sprintf("syslog+tcp://127.0.0.1:%d", tcpPort), "format": "cef"})
		// The format defaults to cef for a syslog URL.
		overTLS, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": fmt.Sprintf("syslog+tls://localhost:%d", tlsPort), "eventTypes": []string{"threat.*"}})
		appendEvent(t, env, a.Org.ID, event.ThreatDetected, map[string]any{"session_id": sid, "source_ip": "203.0.113.9",
			"classification": "ai_agent_malicious", "severity": "critical", "score": 95, "hit_count": 3})
		waitFor(t, "the TCP deliveries", settled(t, env, overTCP, 1))
		waitFor(t, "the TLS delivery", settled(t, env, overTLS, 1))
		for _, ep := range []string{overTCP, overTLS} {
			for _, d := range deliveries(t, env, ep) {
				if d.Status != webhookdelivery.StatusSUCCEEDED {
					t.Fatalf("%s: delivery %s %s: %+v", ep, d.EventType, d.Status, d.Attempts)
				}
			}
		}
		var lines []string
		waitFor(t, "rsyslog to write both messages", func() bool {
			b, _ := os.ReadFile(out)
			lines = nil
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			for sc.Scan() {
				if strings.Contains(sc.Text(), "threat.detected") && strings.Contains(sc.Text(), "cs1="+sid+" ") {
					lines = append(lines, sc.Text())
				}
			}
			return len(lines) >= 2
		})
		inputs := map[string]bool{}
		for _, l := range lines {
			f := strings.SplitN(l, "\t", 8)
			if len(f) != 8 {
				t.Fatalf("rsyslog wrote %q", l)
			}
			// facility 4 (auth), severity 2 (critical), the app, the event type as MSGID.
			if f[0] != "4" || f[1] != "2" || f[4] != "flytrap" || f[5] != "threat.detected" || f[3] == "" || f[3] == "-" {
				t.Errorf("parsed header %q", f[:6])
			}
			if _, err := time.Parse(time.RFC3339, f[2]); err != nil {
				t.Errorf("timestamp %q: %v", f[2], err)
			}
			inputs[f[6]] = true
			cef := f[7]
			for _, want := range []string{"CEF:0|Flytrap|Flytrap|1|threat.detected|Threat detected: Malicious AI agent (critical)|10|",
				"src=203.0.113.9", "cs1Label=session cs1=" + sid, "cat=AI_AGENT_MALICIOUS", "cs4=AML.T0051 LLM Prompt Injection", "cn1=95"} {
				if !strings.Contains(cef, want) {
					t.Errorf("CEF %q lacks %q", cef, want)
				}
			}
		}
		if !inputs["tcp"] || !inputs["tls"] {
			t.Fatalf("messages came in over %v, want tcp and tls", inputs)
		}
	})
}

// A certificate from another CA fails the attempt with the certificate message, and the
// network rules apply to syslog as to HTTP: loopback is refused unless allowed.
func TestSyslogRefusals(t *testing.T) {
	bin := rsyslogd(t)
	dir := t.TempDir()
	testCA(t, dir)
	_, tlsPort, _ := startRsyslog(t, bin, dir)
	env := ft.Start(t, ft.Backends()[0], fast) // the system's roots: the test CA is unknown
	a := env.Tenant("acme")
	ep, _ := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": fmt.Sprintf("syslog+tls://localhost:%d", tlsPort)})
	appendEvent(t, env, a.Org.ID, event.ThreatDetected, map[string]any{"session_id": "ses_1", "source_ip": "203.0.113.9", "classification": "bot", "severity": "low"})
	waitFor(t, "the attempt", func() bool { ds := deliveries(t, env, ep); return len(ds) == 1 && len(ds[0].Attempts) > 0 })
	if d := deliveries(t, env, ep)[0]; d.Attempts[0].Error != webhook.MsgCertificate {
		t.Fatalf("attempt %+v, want %q", d.Attempts[0], webhook.MsgCertificate)
	}

	guarded := ft.Start(t, ft.Backends()[0], func(cfg *server.Config) { fast(cfg); cfg.Webhook.AllowPrivate = false })
	g := guarded.Tenant("acme")
	data := guarded.MustGraphQL(g.ReadWrite, `mutation($in: CreateWebhookEndpointInput!) {
		createWebhookEndpoint(input: $in) { warning endpoint { id format } } }`,
		map[string]any{"in": map[string]any{"url": fmt.Sprintf("syslog+tcp://127.0.0.1:%d", freePort(t))}})
	warning, _ := ft.Dig(data, "createWebhookEndpoint", "warning").(string)
	if ft.Dig(data, "createWebhookEndpoint", "endpoint", "format") != "cef" ||
		!strings.Contains(warning, "flytrap admin orgs set-webhook-network --org "+g.Org.ID+" --allow-cidrs 127.0.0.1/32") {
		t.Fatalf("create answered %v", data)
	}
	// REST says it too, for an HTTP URL on loopback; a public address gets no warning.
	for url, want := range map[string]bool{"http://127.0.0.1:9/hook": true, "https://8.8.8.8/hook": false} {
		req, _ := http.NewRequest("POST", guarded.HTTP.URL+"/dashboard/api/webhooks", strings.NewReader(`{"url":"`+url+`"}`))
		req.Header.Set("Authorization", "Bearer "+g.ReadWrite)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Data struct {
				Warning string `json:"warning"`
			} `json:"data"`
		}
		_ = json.NewDecoder(res.Body).Decode(&body)
		res.Body.Close()
		has := strings.Contains(body.Data.Warning, "flytrap admin orgs set-webhook-network --org "+g.Org.ID)
		if res.StatusCode != http.StatusCreated || has != want {
			t.Errorf("POST %s: %d, warning %q", url, res.StatusCode, body.Data.Warning)
		}
	}
	id := ft.Dig(data, "createWebhookEndpoint", "endpoint", "id").(string)
	appendEvent(t, guarded, g.Org.ID, event.ThreatDetected, map[string]any{"session_id": "ses_1", "source_ip": "203.0.113.9", "classification": "bot", "severity": "low"})
	waitFor(t, "the attempt", func() bool { ds := deliveries(t, guarded, id); return len(ds) == 1 && len(ds[0].Attempts) > 0 })
	if d := deliveries(t, guarded, id)[0]; d.Attempts[0].Error != webhook.MsgNotAllowed || !strings.Contains(d.Attempts[0].Error, "flytrap admin orgs set-webhook-network") {
		t.Fatalf("attempt %+v", d.Attempts[0])
	}
	// cef only over syslog, and syslog only with cef.
	for _, in := range []map[string]any{{"url": "https://siem.example.com/", "format": "cef"}, {"url": "syslog+tls://siem.example.com", "format": "json"},
		{"url": "syslog+tcp://siem.example.com/path"}, {"url": "syslog+tcp://siem.example.com:99999"}} {
		if r := guarded.GraphQL(g.ReadWrite, `mutation($in: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $in) { secret } }`,
			map[string]any{"in": in}); r.Code() != "BAD_USER_INPUT" {
			t.Errorf("%v: %s", in, r.Raw)
		}
	}
}

// The message itself, parsed by an independent RFC 5424 and RFC 6587 parser: escaping keeps
// a visitor's text inside its CEF field.
func TestSyslogMessageParses(t *testing.T) {
	payload := map[string]any{"id": "evt_1", "type": "threat.escalated", "created_at": "2026-11-27T20:00:00.123Z", "org_id": "org_1",
		"data":    map[string]any{"session_id": "ses_1", "source_ip": "2001:db8::1", "classification": "scanner", "severity": "high", "score": float64(75)},
		"context": map[string]any{"user_agent": "evil|agent=1\\ cs1=forged\nnext line"}}
	msg, err := webhook.SyslogMessage(payload, webhook.RenderOptions{PublicURL: "https://flytrap.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	framed := fmt.Sprintf("%d %s", len(msg), msg)
	var got []*rfc5424.SyslogMessage
	octetcounting.NewParser(syslog.WithListener(func(r *syslog.Result) {
		if r.Error != nil {
			t.Fatalf("parse: %v", r.Error)
		}
		got = append(got, r.Message.(*rfc5424.SyslogMessage))
	})).Parse(strings.NewReader(framed))
	if len(got) != 1 {
		t.Fatalf("parsed %d messages from %q", len(got), framed)
	}
	m := got[0]
	if *m.Priority != 4*8+3 || *m.Appname != "flytrap" || *m.MsgID != "threat.escalated" || m.Timestamp.UnixMilli() != time.Date(2026, 11, 27, 20, 0, 0, 123e6, time.UTC).UnixMilli() {
		t.Fatalf("parsed %+v", m)
	}
	cef := *m.Message
	if strings.Contains(cef, "\n") || !strings.Contains(cef, `requestClientApplication=evil|agent\=1\\ cs1\=forged\nnext line`) ||
		strings.Count(cef, " cs1=") != 1 || !strings.Contains(cef, "request=https://flytrap.example.com/sessions/ses_1") ||
		strings.Contains(cef, "AML.T0051") {
		t.Fatalf("CEF %q", cef)
	}
}

// The ecs format: one signed NDJSON line per event, an ECS document with the event's fields.
func TestECSWebhook(t *testing.T) {
	env := ft.Start(t, ft.Backends()[0], fast)
	a := env.Tenant("acme")
	rc := newReceiver(t, nil)
	ep, secret := createEndpoint(t, env, a.ReadWrite, map[string]any{"url": rc.URL, "format": "ecs", "eventTypes": []string{"threat.*"}})
	appendEvent(t, env, a.Org.ID, event.ThreatDetected, map[string]any{"session_id": "ses_1", "source_ip": "203.0.113.9",
		"classification": "ai_agent", "severity": "high", "score": 80})
	waitFor(t, "the delivery", settled(t, env, ep, 1))
	got := rc.got()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	r := got[0]
	if ct := r.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Fatalf("Content-Type %q", ct)
	}
	if err := verifyStandardWebhook(secret, r.header, r.body, time.Now()); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if !strings.HasSuffix(string(r.body), "}\n") || strings.Count(string(r.body), "\n") != 1 {
		t.Fatalf("not one NDJSON line: %q", r.body)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	if ft.Dig(doc, "source", "ip") != "203.0.113.9" || ft.Dig(doc, "event", "kind") != "alert" ||
		ft.Dig(doc, "threat", "technique", "id", 0) != "AML.T0051" || ft.Dig(doc, "flytrap", "session", "id") != "ses_1" {
		t.Fatalf("ECS document %s", r.body)
	}
}

// BenchmarkSyslogMessage renders one threat event as an RFC 5424 message with its CEF payload.
func BenchmarkSyslogMessage(b *testing.B) {
	payload := map[string]any{"id": "evt_1", "type": "threat.detected", "created_at": "2026-11-27T20:00:00.123Z", "org_id": "org_1",
		"data": map[string]any{"session_id": "ses_1", "source_ip": "203.0.113.9", "classification": "ai_agent_malicious", "severity": "critical", "score": float64(95)},
		"context": map[string]any{"user_agent": "Mozilla/5.0 (compatible; ChatGPT-User/1.0)",
			"traps":   []any{map[string]any{"id": "trp_1", "name": "Docs", "path": "/internal/docs"}},
			"signals": []any{map[string]any{"name": "CALLBACK_HIT", "count": float64(3)}}}}
	for b.Loop() {
		if _, err := webhook.SyslogMessage(payload, webhook.RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
