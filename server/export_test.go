package server

import (
	"context"
	"time"
)

// SetWebsocketInitTimeout shortens how long a WebSocket may wait before connection_init, for tests.
func SetWebsocketInitTimeout(s *Server, d time.Duration) { s.ws.InitTimeout = d }

// SetWebsocketAdmit replaces the per-operation admission check of WebSockets, for tests.
func SetWebsocketAdmit(s *Server, f func(ctx context.Context) error) { s.ws.Admit = f }

// WebsocketPanics counts the panics recovered in WebSocket connections.
func WebsocketPanics(s *Server) int64 { return s.ws.Panics() }

// UnauthenticatedConns is how many API connections have not authenticated yet.
func UnauthenticatedConns(s *Server) int { return s.gate.Unauthenticated() }

// SetAuthFailureClock replaces the clock of the failed-authentication limiter.
func SetAuthFailureClock(s *Server, now func() time.Time) { s.fails.Now = now }

// SetCredentialCheck sets how often subscriptions re-check their credential, for tests.
func SetCredentialCheck(s *Server, d time.Duration) { s.resolver.CredentialCheck = d }
