package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leodido/go-syslog/v4/rfc5424"

	"github.com/flytrap/flytrap/ecs"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schematype"
)

// Syslog destinations: an endpoint whose URL has one of these schemes is sent its events as
// RFC 5424 syslog messages with a CEF payload, octet-counted (RFC 6587) over TCP or TLS, one
// connection per attempt. The same outbox, retries, throttle and network rules apply as to
// HTTP endpoints; an attempt succeeds when the whole message was written (and, over TLS,
// the handshake verified the receiver's certificate).
const (
	SchemeSyslogTCP = "syslog+tcp" // plain TCP; port 601 unless given
	SchemeSyslogTLS = "syslog+tls" // TLS (RFC 5425); port 6514 unless given
)

// IsSyslogURL reports whether raw names a syslog destination.
func IsSyslogURL(raw string) bool {
	s, _, ok := strings.Cut(raw, "://")
	return ok && (strings.EqualFold(s, SchemeSyslogTCP) || strings.EqualFold(s, SchemeSyslogTLS))
}

// syslogFacility is the facility of every message: 4, security/authorization (RFC 5424 §6.2.1).
const syslogFacility = 4

// maxSyslogMessage bounds one message: receivers commonly accept 8 KiB (rsyslog's default
// maxMessageSize); attacker-controlled values are clipped before that.
const maxSyslogMessage = 8 << 10

// hostname is the HOSTNAME of the messages: this machine's name, or "flytrap".
var hostname = func() string {
	h, err := os.Hostname()
	if err != nil || h == "" || len(h) > 255 {
		return "flytrap"
	}
	for _, r := range h {
		if r < 33 || r > 126 {
			return "flytrap"
		}
	}
	return h
}()

// syslogSeverity maps an event's severity onto syslog's: critical 2, high 3, medium 4, low 5; others 6 (informational).
func syslogSeverity(sev string) uint8 {
	switch strings.ToLower(sev) {
	case "critical":
		return 2
	case "high":
		return 3
	case "medium":
		return 4
	case "low":
		return 5
	}
	return 6
}

// SyslogMessage is the RFC 5424 message of payload (an enriched event envelope) with a CEF
// message, without framing. APP-NAME is "flytrap", MSGID the event type.
func SyslogMessage(payload map[string]any, opts RenderOptions) (string, error) {
	p := enrich(payload, opts)
	ts := str(p, "created_at")
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		ts = time.Now().UTC().Format(time.RFC3339Nano)
	}
	typ := str(p, "type")
	msgID := typ
	if len(msgID) > 32 || msgID == "" {
		msgID = "-"
	}
	m := &rfc5424.SyslogMessage{}
	m.SetPriority(syslogFacility*8 + syslogSeverity(str(dataOf(p), "severity")))
	m.SetVersion(1)
	m.SetTimestamp(ts)
	m.SetHostname(hostname)
	m.SetAppname("flytrap")
	m.SetMsgID(msgID)
	m.SetMessage(CEF(p))
	if !m.Valid() {
		return "", errors.New("syslog message not valid")
	}
	s, err := m.String()
	if err != nil {
		return "", err
	}
	if len(s) > maxSyslogMessage {
		s = s[:maxSyslogMessage]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s, nil
}

// cefSeverity is the CEF header's 0–10 severity.
func cefSeverity(sev string) string {
	switch strings.ToLower(sev) {
	case "critical":
		return "10"
	case "high":
		return "8"
	case "medium":
		return "5"
	case "low":
		return "3"
	}
	return "1"
}

// maxCEFValue bounds one extension value (visitors choose user agents and more).
const maxCEFValue = 1023

// cefHeader escapes a header field: backslash and pipe (CEF Implementation Standard, "Special characters").
func cefHeader(s string) string {
	return cefHeaderEscaper.Replace(oneLineClip(s))
}

var (
	cefHeaderEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, "\r", " ", "\n", " ")
	cefValueEscaper  = strings.NewReplacer(`\`, `\\`, `=`, `\=`, "\r\n", `\n`, "\n", `\n`, "\r", `\r`)
)

// cefValue escapes an extension value: backslash, equals sign, and line breaks as \n and \r.
func cefValue(s string) string {
	if len(s) > maxCEFValue {
		s = s[:maxCEFValue]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return cefValueEscaper.Replace(s)
}

func oneLineClip(s string) string {
	s = oneLine(s)
	if len(s) > 512 {
		s = s[:512]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// CEF is payload (an enriched event envelope) in ArcSight's Common Event Format:
// "CEF:0|Flytrap|Flytrap|1|<event type>|<name>|<0–10>|<extensions>". The extension keys are
// CEF's own dictionary (src, requestClientApplication, rt, externalId, cat, request, msg) and
// labelled custom strings (cs1 session, cs2 traps, cs3 signals, cs4 MITRE ATLAS technique,
// cs5 organization) and number (cn1 score).
func CEF(p map[string]any) string {
	typ, d := str(p, "type"), dataOf(p)
	c, _ := p["context"].(map[string]any)
	var ext []string
	add := func(k, v string) {
		if v != "" {
			ext = append(ext, k+"="+cefValue(v))
		}
	}
	name := typ
	if t, err := time.Parse(time.RFC3339Nano, str(p, "created_at")); err == nil {
		add("rt", strconv.FormatInt(t.UnixMilli(), 10))
	}
	add("externalId", str(p, "id"))
	switch {
	case strings.HasPrefix(typ, "threat."):
		a := summarize(p)
		name = a.title
		add("src", str(d, "source_ip"))
		add("requestClientApplication", str(c, "user_agent"))
		add("cat", strings.ToUpper(str(d, "classification")))
		add("request", str(c, "session_url"))
		add("cs1Label", "session")
		add("cs1", str(d, "session_id"))
		if t := trapsText(c); t != "" {
			add("cs2Label", "traps")
			add("cs2", t)
		}
		if s := signalsText(c); s != "" {
			add("cs3Label", "signals")
			add("cs3", s)
		}
		if ecs.InjectionClass(str(d, "classification")) {
			add("cs4Label", "atlasTechnique")
			add("cs4", ecs.ATLASPromptInjection+" "+ecs.ATLASPromptInjectionName)
		}
		if v := str(d, "score"); v != "" {
			add("cn1Label", "score")
			add("cn1", v)
		}
		add("msg", a.title)
	case strings.HasPrefix(typ, "trap."):
		name = fmt.Sprintf("Trap %s: %s", strings.TrimPrefix(typ, "trap."), str(d, "name"))
		add("request", str(d, "path"))
		add("cs6Label", "trap")
		add("cs6", str(d, "id"))
	}
	add("cs5Label", "organization")
	add("cs5", str(p, "org_id"))
	return "CEF:0|Flytrap|Flytrap|1|" + cefHeader(typ) + "|" + cefHeader(name) + "|" +
		cefSeverity(str(d, "severity")) + "|" + strings.Join(ext, " ")
}

// syslogAddress is the host:port a syslog URL names, and whether it asks for TLS.
func syslogAddress(raw string) (host, addr string, useTLS bool, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "", "", false, errors.New("not a syslog URL")
	}
	useTLS = strings.EqualFold(u.Scheme, SchemeSyslogTLS)
	port := u.Port()
	if port == "" {
		port = "601"
		if useTLS {
			port = "6514"
		}
	}
	return u.Hostname(), net.JoinHostPort(u.Hostname(), port), useTLS, nil
}

// sendSyslog makes one syslog attempt: connect through the organization's guard, (TLS,)
// write one octet-counted message, close.
func (d *Dispatcher) sendSyslog(ctx context.Context, dl *ent.WebhookDelivery, ep *ent.WebhookEndpoint, nw Network) result {
	start := d.now()
	res := result{attempt: schematype.WebhookAttempt{At: start.UTC().Truncate(time.Millisecond)}}
	failWith := func(msg string, err error) result {
		d.log.Warn("syslog attempt failed", "delivery", dl.ID, "endpoint", ep.ID, "org", dl.OrgID, "error", msg, "cause", err)
		res.attempt.Error = msg
		res.attempt.LatencyMs = d.now().Sub(start).Milliseconds()
		return res
	}
	msg, err := SyslogMessage(dl.Payload, RenderOptions{PublicURL: d.cfg.PublicURL})
	if err != nil {
		return failWith(MsgBuildRequest, err)
	}
	host, addr, useTLS, err := syslogAddress(ep.URL)
	if err != nil {
		return failWith(MsgBuildRequest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	g := d.guard(nw)
	dialer := &net.Dialer{Timeout: d.cfg.Timeout, Control: g.control}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return failWith(SafeError(err), err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if useTLS {
		tc := tls.Client(conn, &tls.Config{ServerName: host, RootCAs: d.cfg.RootCAs, MinVersion: tls.VersionTLS12})
		if err := tc.HandshakeContext(ctx); err != nil {
			return failWith(SafeError(err), err)
		}
		conn = tc
	}
	frame := strconv.Itoa(len(msg)) + " " + msg
	if _, err := conn.Write([]byte(frame)); err != nil {
		return failWith(SafeError(err), err)
	}
	if tc, ok := conn.(*tls.Conn); ok {
		if err := tc.CloseWrite(); err != nil { // close_notify: the receiver has the whole stream
			return failWith(SafeError(err), err)
		}
	}
	res.ok = true
	res.attempt.LatencyMs = d.now().Sub(start).Milliseconds()
	return res
}
