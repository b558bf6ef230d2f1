// Package wire holds the JSON shapes of the customer's REST API and of the event log,
// one typed struct each (as Miniflux's internal/api/payload.go): the REST adapter, the
// event outbox and the webhooks write these and nothing else. Fields are declared in the
// order of their JSON names, so the bytes are those of the sorted maps the shapes replace;
// the documented shapes themselves are pinned by rest/testdata/golden.
package wire

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/schematype"
	"github.com/flytrap/flytrap/fingerprint"
)

// Time layouts of the API document: traps and sessions carry milliseconds, events seconds.
const (
	MillisLayout  = "2006-01-02T15:04:05.000Z"
	SecondsLayout = "2006-01-02T15:04:05Z"
)

// Millis formats t as ISO 8601 UTC with milliseconds.
func Millis(t time.Time) string { return t.UTC().Format(MillisLayout) }

// Seconds formats t as ISO 8601 UTC with seconds.
func Seconds(t time.Time) string { return t.UTC().Format(SecondsLayout) }

func optMillis(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := Millis(*t)
	return &s
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Success is the dashboard wrapper {"success": true, "data": …}.
type Success[T any] struct {
	Data    T    `json:"data"`
	Success bool `json:"success"` // always true
}

// Failure is every REST error: {"success": false, "error": "…"}.
type Failure struct {
	Error string `json:"error"`
	// ConflictID is the id of the record in the way of a 409, when known.
	ConflictID string `json:"conflict_id,omitempty"`
	Success    bool   `json:"success"` // always false
}

// Page is a paginated dashboard list.
type Page[T any] struct {
	Data       []T        `json:"data"`
	Pagination Pagination `json:"pagination"`
	Success    bool       `json:"success"` // always true
}

// Pagination says whether a list goes on and where.
type Pagination struct {
	HasMore    bool   `json:"has_more"`
	NextCursor string `json:"next_cursor"`
}

// Deleted answers a DELETE.
type Deleted struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// Trap is a trap as the document shows it, and the data of trap.* events.
type Trap struct {
	Active      int    `json:"active"` // the document's 0/1
	CreatedAt   string `json:"created_at"`
	Description string `json:"description"`
	ID          string `json:"id"`
	Name        string `json:"name"`
	OrgID       string `json:"org_id"`
	Path        string `json:"path"`
	PublicTitle string `json:"public_title"` // what visitors read; "" when generated
	SiteID      string `json:"site_id"`
	Type        string `json:"type"`
}

// TrapOf is t's shape.
func TrapOf(t *ent.Trap) Trap {
	active := 0
	if t.Active {
		active = 1
	}
	return Trap{Active: active, CreatedAt: Millis(t.CreatedAt), Description: t.Description, ID: t.ID, Name: t.Name,
		OrgID: t.OrgID, Path: t.Path, PublicTitle: t.PublicTitle, SiteID: t.SiteID, Type: string(t.Type)}
}

// Session is a session as the document lists it.
type Session struct {
	Classification    string   `json:"classification"`
	Confidence        int      `json:"confidence"`
	ExtractedModel    string   `json:"extracted_model"`
	ExtractedOperator string   `json:"extracted_operator"`
	FirstSeen         string   `json:"first_seen"`
	HitCount          int      `json:"hit_count"`
	ID                string   `json:"id"`
	LastSeen          string   `json:"last_seen"`
	Score             int      `json:"score"`
	Severity          string   `json:"severity"`
	SignalsFired      []string `json:"signals_fired"`
	SourceIP          string   `json:"source_ip"`
	TrapsTriggered    []string `json:"traps_triggered"`
	// Triage (additions to the document's fields): open, acknowledged, resolved or ignored;
	// who set it (an API key's id, or the identity provider's subject) and when (null while open).
	TriageState   string  `json:"triage_state"`
	TriagedAt     *string `json:"triaged_at"`
	TriagedBy     string  `json:"triaged_by"`
	TriagedByName string  `json:"triaged_by_name"`
	UserAgent     string  `json:"user_agent"`
}

// SessionOf is s's shape.
func SessionOf(s *ent.Session) Session {
	return Session{Classification: string(s.Classification), Confidence: s.Confidence, ExtractedModel: s.ExtractedModel,
		ExtractedOperator: s.ExtractedOperator, FirstSeen: Millis(s.FirstSeen), HitCount: s.HitCount, ID: s.ID,
		LastSeen: Millis(s.LastSeen), Score: s.Score, Severity: string(s.Severity), SignalsFired: nonNil(s.SignalsFired),
		SourceIP: s.SourceIP, TrapsTriggered: nonNil(s.TrapsTriggered), UserAgent: s.UserAgent,
		TriageState: string(s.TriageState), TriagedAt: millisOrNil(s.TriagedAt), TriagedBy: s.TriagedBy, TriagedByName: s.TriagedByName}
}

func millisOrNil(t *time.Time) *string {
	if t == nil {
		return nil
	}
	v := Millis(*t)
	return &v
}

// Triaged is the data of session.triaged events: the session's new and previous triage
// state, who changed it, and what the session is.
type Triaged struct {
	Classification string `json:"classification"` // lower case, as threat events
	PreviousState  string `json:"previous_state"`
	SessionID      string `json:"session_id"`
	Severity       string `json:"severity"`
	SourceIP       string `json:"source_ip"`
	State          string `json:"state"`
	TriagedBy      string `json:"triaged_by"`
	TriagedByName  string `json:"triaged_by_name"`
}

// TriageResult is POST /dashboard/api/triage's data.
type TriageResult struct {
	Changed  int       `json:"changed"`
	Sessions []Session `json:"sessions"`
}

// Gate is GET /dashboard/api/gate's data.
type Gate struct {
	Count      int       `json:"count"`
	CountExact bool      `json:"count_exact"`
	Failed     bool      `json:"failed"`
	Sessions   []Session `json:"sessions"`
	Severities []string  `json:"severities"`
	Since      *string   `json:"since"`
}

// SessionDetail is a session with its evidence (GET /dashboard/api/sessions/{id}).
type SessionDetail struct {
	Session
	Callbacks    []Hit         `json:"callbacks"` // the hits of kind callback
	ClientStacks []ClientStack `json:"client_stacks"`
	Extracted    Extracted     `json:"extracted"`
	Hits         []Hit         `json:"hits"`
	Signals      []Signal      `json:"signals"`
	// Each list holds the newest items within the server's count and byte limits; these say
	// the session has more (GraphQL's hitsTruncated, signalsTruncated, promptsTruncated).
	HitsTruncated    bool `json:"hits_truncated"`
	PromptsTruncated bool `json:"prompts_truncated"`
	SignalsTruncated bool `json:"signals_truncated"`
	// Signature is what the session's signed requests proved (Web Bot Auth), in words:
	// "verified: <agent> (key <keyid>)" or why not; null when it sent none.
	Signature *string `json:"signature"`
}

// MarshalJSON writes the session's and the detail's fields as one object, keys sorted.
func (d SessionDetail) MarshalJSON() ([]byte, error) {
	type plain SessionDetail // without this method
	return sortedObject(plain(d))
}

// ClientStack is one combination of fingerprints a session's hits carried (app.ClientStack).
type ClientStack struct {
	Family        *string `json:"family"`
	H2Fingerprint *string `json:"h2_fingerprint"`
	HeaderOrder   *string `json:"header_order"`
	Hits          int     `json:"hits"`
	JA4           *string `json:"ja4"`
}

// stackOf is the client stack family h's fingerprints point to, or nil.
func stackOf(h *ent.Hit) *string {
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	if f := fingerprint.Family(deref(h.Ja4), deref(h.H2Fingerprint), deref(h.HeaderOrder)); f != "" {
		return &f
	}
	return nil
}

// Extracted is what a session's detail says about the agent behind it.
type Extracted struct {
	Model    string   `json:"model"`
	Operator string   `json:"operator"`
	Prompts  []string `json:"prompts"`
}

// Hit is one request a session made.
type Hit struct {
	Body          string              `json:"body"`
	BodyTruncated bool                `json:"body_truncated"`
	ClientStack   *string             `json:"client_stack"`
	H2Fingerprint *string             `json:"h2_fingerprint"`
	HeaderOrder   *string             `json:"header_order"`
	Headers       map[string][]string `json:"headers"`
	ID            string              `json:"id"`
	JA4           *string             `json:"ja4"`
	Kind          string              `json:"kind"`
	Method        string              `json:"method"`
	Path          string              `json:"path"`
	Query         string              `json:"query"`
	ReceivedAt    string              `json:"received_at"`
	Signals       []string            `json:"signals"`
	SourceIP      string              `json:"source_ip"`
	Status        int                 `json:"status"`
	TrapID        string              `json:"trap_id"`
	UserAgent     string              `json:"user_agent"`
}

// HitOf is h's shape.
func HitOf(h *ent.Hit) Hit {
	headers := h.Headers
	if headers == nil {
		headers = map[string][]string{}
	}
	return Hit{Body: h.Body, BodyTruncated: h.BodyTruncated, Headers: headers, ID: h.ID, Kind: string(h.Kind),
		Method: h.Method, Path: h.Path, Query: h.Query, ReceivedAt: Millis(h.ReceivedAt), Signals: nonNil(h.Signals),
		SourceIP: h.SourceIP, Status: h.Status, TrapID: h.TrapID, UserAgent: h.UserAgent,
		JA4: h.Ja4, H2Fingerprint: h.H2Fingerprint, HeaderOrder: h.HeaderOrder, ClientStack: stackOf(h)}
}

// Signal is one signal firing with its evidence.
type Signal struct {
	CreatedAt   string `json:"created_at"`
	DelayMs     *int64 `json:"delay_ms"`
	Detail      string `json:"detail"`
	HitID       string `json:"hit_id"`
	Name        string `json:"name"`
	Placement   string `json:"placement"`
	SourceHitID string `json:"source_hit_id"`
	Tripwire    bool   `json:"tripwire"`
}

// SignalOf is s's shape.
func SignalOf(s *ent.Signal) Signal {
	return Signal{CreatedAt: Millis(s.CreatedAt), DelayMs: s.DelayMs, Detail: s.Detail, HitID: s.HitID, Name: s.Name,
		Placement: s.Placement, SourceHitID: s.SourceHitID, Tripwire: s.Tripwire}
}

// TimelineBucket is one hour of the analytics timeline.
type TimelineBucket struct {
	Hits int    `json:"hits"`
	Hour string `json:"hour"`
}

// WebhookEndpoint is a webhook endpoint; its secrets are never shown but once (WithSecret).
type WebhookEndpoint struct {
	Active                  bool     `json:"active"`
	CreatedAt               string   `json:"created_at"`
	Description             string   `json:"description"`
	DisabledReason          string   `json:"disabled_reason"`
	EventTypes              []string `json:"event_types"`
	FailingSince            *string  `json:"failing_since"`
	Format                  string   `json:"format"`
	ID                      string   `json:"id"`
	PreviousSecretExpiresAt *string  `json:"previous_secret_expires_at"`
	ThrottleMinutes         int      `json:"throttle_minutes"`
	UpdatedAt               string   `json:"updated_at"`
	URL                     string   `json:"url"`
}

// WebhookEndpointOf is e's shape.
func WebhookEndpointOf(e *ent.WebhookEndpoint) WebhookEndpoint {
	return WebhookEndpoint{Active: e.Active, CreatedAt: Millis(e.CreatedAt), Description: e.Description,
		DisabledReason: e.DisabledReason, EventTypes: nonNil(e.EventTypes), FailingSince: optMillis(e.FailingSince),
		Format: string(e.Format), ID: e.ID, PreviousSecretExpiresAt: optMillis(e.PreviousSecretExpiresAt),
		ThrottleMinutes: e.ThrottleMinutes, UpdatedAt: Millis(e.UpdatedAt), URL: e.URL}
}

// WebhookEndpointWithSecret is an endpoint as created or rotated: its signing secret, once.
type WebhookEndpointWithSecret struct {
	WebhookEndpoint
	Secret string `json:"secret"`
	// Warning, on creation, says why deliveries will fail and how to fix it (a private address).
	Warning string `json:"warning,omitempty"`
}

// MarshalJSON writes the endpoint and its secret as one object, keys sorted.
func (e WebhookEndpointWithSecret) MarshalJSON() ([]byte, error) {
	type plain WebhookEndpointWithSecret
	return sortedObject(plain(e))
}

// WebhookDelivery is one delivery of a message to an endpoint, with its attempts.
type WebhookDelivery struct {
	AttemptCount   int              `json:"attempt_count"`
	Attempts       []WebhookAttempt `json:"attempts"`
	CreatedAt      string           `json:"created_at"`
	DeliveredAt    *string          `json:"delivered_at"`
	EndpointID     string           `json:"endpoint_id"`
	EventType      string           `json:"event_type"`
	ID             string           `json:"id"`
	LastError      string           `json:"last_error"`
	LastStatusCode *int             `json:"last_status_code"`
	MessageID      string           `json:"message_id"`
	NextAttemptAt  string           `json:"next_attempt_at"`
	Payload        map[string]any   `json:"payload"`
	Status         string           `json:"status"` // lower case
}

// WebhookAttempt is one try at sending a delivery.
type WebhookAttempt struct {
	At         string `json:"at"`
	Error      string `json:"error"`
	LatencyMs  int64  `json:"latency_ms"`
	Response   string `json:"response"`
	StatusCode int    `json:"status_code"`
}

// WebhookDeliveryOf is d's shape.
func WebhookDeliveryOf(d *ent.WebhookDelivery) WebhookDelivery {
	attempts := make([]WebhookAttempt, len(d.Attempts))
	for i, a := range d.Attempts {
		attempts[i] = webhookAttemptOf(a)
	}
	return WebhookDelivery{AttemptCount: d.AttemptCount, Attempts: attempts, CreatedAt: Millis(d.CreatedAt),
		DeliveredAt: optMillis(d.DeliveredAt), EndpointID: d.EndpointID, EventType: d.EventType, ID: d.ID,
		LastError: d.LastError, LastStatusCode: d.LastStatusCode, MessageID: d.MessageID,
		NextAttemptAt: Millis(d.NextAttemptAt), Payload: d.Payload, Status: lower(string(d.Status))}
}

func webhookAttemptOf(a schematype.WebhookAttempt) WebhookAttempt {
	return WebhookAttempt{At: Millis(a.At), Error: a.Error, LatencyMs: a.LatencyMs, Response: a.Response, StatusCode: a.StatusCode}
}

// Event is an event as integrations receive it: the REST list, the stream, webhooks.
type Event struct {
	APIVersion string         `json:"api_version"`
	CreatedAt  string         `json:"created_at"`
	Data       map[string]any `json:"data"`
	ID         string         `json:"id"`
	Type       string         `json:"type"`
}

// EventOf is ev's shape.
func EventOf(ev *ent.Event) Event {
	data := ev.Data
	if data == nil {
		data = map[string]any{}
	}
	return Event{APIVersion: ev.APIVersion, CreatedAt: Seconds(ev.CreatedAt), Data: data, ID: ev.ID, Type: ev.Type}
}

// EventsPage is GET /api/v1/events.
type EventsPage struct {
	Events     []Event `json:"events"`
	HasMore    bool    `json:"has_more"`
	NextCursor string  `json:"next_cursor"`
}

// Threat is the data of threat.* events, as the API document's table gives it.
type Threat struct {
	Classification    string   `json:"classification"` // lower case
	ExtractedModel    string   `json:"extracted_model"`
	ExtractedOperator string   `json:"extracted_operator"`
	HitCount          int      `json:"hit_count"`
	Score             int      `json:"score"`
	SessionID         string   `json:"session_id"`
	Severity          string   `json:"severity"`
	SourceIP          string   `json:"source_ip"`
	TrapsTriggered    []string `json:"traps_triggered"`
	TripwiresFired    int      `json:"tripwires_fired"`
}

// Ping is the data of a webhook.ping message.
type Ping struct {
	EndpointID string `json:"endpoint_id"`
	OrgID      string `json:"org_id"`
}

// EndpointDisabled is the data of webhook_endpoint.disabled events.
type EndpointDisabled struct {
	EndpointID string `json:"endpoint_id"`
	Reason     string `json:"reason"`
	URL        string `json:"url"` // redacted: no credentials, query or fragment
}

// AlertContext is what a threat alert carries besides the event's data, all of it bounded:
// the session's signals with their counts, its traps by name, its user agent.
type AlertContext struct {
	Signals   []AlertSignal `json:"signals"`
	Traps     []AlertTrap   `json:"traps"`
	TrapsMore int           `json:"traps_more,omitempty"` // traps left out past the bound
	UserAgent string        `json:"user_agent"`
}

// AlertSignal is a signal of an alert's session and how often it fired.
type AlertSignal struct {
	Count int    `json:"count"`
	Name  string `json:"name"`
}

// AlertTrap is a trap an alert's session touched; a deleted trap keeps its id only.
type AlertTrap struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Path string `json:"path"`
}

// Object is v as the JSON object the event log stores (ent's JSON column holds a
// map): numbers become float64, exactly as the row reads back.
func Object(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("wire: " + err.Error()) // the shapes here always marshal
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic("wire: " + err.Error())
	}
	return m
}

// sortedObject marshals v, a struct with embedded shapes, with its keys sorted as a map's.
func sortedObject(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func lower(s string) string { return string(bytes.ToLower([]byte(s))) }
