package server

import "time"

// SetWebsocketInitTimeout shortens how long a WebSocket may wait before connection_init, for tests.
func SetWebsocketInitTimeout(s *Server, d time.Duration) { s.ws.initTimeout = d }

// UnauthenticatedConns is how many API connections have not authenticated yet.
func UnauthenticatedConns(s *Server) int { return s.gate.Unauthenticated() }

// SetAuthFailureClock replaces the clock of the failed-authentication limiter.
func SetAuthFailureClock(s *Server, now func() time.Time) { s.fails.now = now }
