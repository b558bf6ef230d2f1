// Package schematype holds Go types stored in JSON columns of the ent schema.
package schematype

import "time"

// SessionState is what the detection engine remembers about a session between hits.
type SessionState struct {
	// Signals counts each signal's firings in the session.
	Signals map[string]int `json:"signals,omitempty"`
	// RobotsAt is when the session was served a robots.txt decoy; Disallowed its disallowed paths.
	RobotsAt   *time.Time `json:"robots_at,omitempty"`
	Disallowed []string   `json:"disallowed,omitempty"`
	// Linked are the paths the decoys served to the session linked to (bounded): following
	// them is browsing, not probing.
	Linked []string `json:"linked,omitempty"`
	// ProbePaths are distinct unknown paths the visitor asked for (bounded).
	ProbePaths []string `json:"probe_paths,omitempty"`
	// ProbeAt is when each of ProbePaths was asked for (Unix seconds), to forget those
	// outside detect.ProbeWindow; sessions stored before it have none.
	ProbeAt []int64 `json:"probe_at,omitempty"`
	// Sent counts the requests that sent something (a method other than GET and HEAD) with
	// a token of hidden content, a sink's most of all: more than opening a link, so never
	// mere curiosity (detect.Curious).
	Sent int `json:"sent,omitempty"`
	// Detected is set once the session crossed the detection threshold; Severity is the severity it was last reported with.
	Detected bool   `json:"detected,omitempty"`
	Severity string `json:"severity,omitempty"`
}

// WebhookAttempt is one try at sending a webhook delivery, as its log keeps it.
type WebhookAttempt struct {
	At time.Time `json:"at"`
	// StatusCode is the receiver's HTTP status, 0 when no response came (refused, timed out).
	StatusCode int    `json:"status_code"`
	LatencyMs  int64  `json:"latency_ms"`
	Error      string `json:"error,omitempty"`
	// Response is the first KiB of the receiver's answer.
	Response string `json:"response,omitempty"`
}
