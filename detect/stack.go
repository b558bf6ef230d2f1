package detect

import "strings"

// BrowserStacks are the client stack families of browsers, as the listener names them in
// Observation.Stack (package fingerprint resolves them from the connection).
var BrowserStacks = map[string]bool{"chromium": true, "firefox": true, "safari": true}

// ClaimedBrowser is the browser stack a user agent claims: "chromium" (Chrome, Edge,
// Opera, Brave…), "firefox" or "safari" (and every browser on iOS, which must use
// Apple's stack), or "" for a user agent that claims no browser.
func ClaimedBrowser(ua string) string {
	if !strings.HasPrefix(ua, "Mozilla/5.0 ") {
		return ""
	}
	switch {
	case strings.Contains(ua, "CriOS/") || strings.Contains(ua, "FxiOS/") || strings.Contains(ua, "EdgiOS/"):
		return "safari"
	case strings.Contains(ua, "Firefox/"):
		return "firefox"
	case strings.Contains(ua, "Chrome/") || strings.Contains(ua, "Chromium/"):
		return "chromium"
	case strings.Contains(ua, "Safari/") && strings.Contains(ua, "Version/"):
		return "safari"
	}
	return ""
}

// StackMismatch is the detail of CLIENT_STACK_MISMATCH when a user agent claims a browser
// and the connection's stack is a library's, or "". A browser claim on another browser's
// stack is not one: user-agent switchers and privacy tools make people send it.
func StackMismatch(ua, stack string) string {
	claim := ClaimedBrowser(ua)
	if claim == "" || stack == "" || BrowserStacks[stack] {
		return ""
	}
	return "user agent claims " + claim + "; the connection's TLS/HTTP stack is " + stack
}
