// Package detect is Flytrap's detection logic, kept pure: no database, no
// HTTP, no clock. Given what a visitor sent, it says who the visitor probably
// is and how much that matters.
//
//   - LookupUA recognises user agents (AI agents, assistants, search and
//     training crawlers from the ai.robots.txt list; search engines, HTTP
//     clients, headless browsers and scanners from built-in lists), and
//     CheckClaim checks a claimed crawler identity against what reverse DNS
//     found (the listener's lookup, Observation.DNS) and the operator's
//     published address ranges (UnverifiedClaim: the ranges alone).
//   - The signal names, which of them are tripwires, and helpers that turn
//     a user agent or a follow-up delay into a signal live in signals.go.
//   - AnalyzePrompt decides whether captured text reads as an AI's own
//     system prompt, and extracts the model and the operator it names.
//   - Judge turns a session's evidence (signal counts, user agent, hits) into
//     a classification, score, confidence and severity from one weights
//     table; Detected says when a session is worth a threat.detected event.
//
// Everything here is safe for concurrent use: the package state is read-only
// tables built once from embedded data, and the crawler range set in effect,
// which SetRanges replaces whole and atomically (crawler.Refresher). docs/detection.md
// describes the rules for people; the tests keep the two in step.
package detect
