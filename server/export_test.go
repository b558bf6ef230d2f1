package server

import "time"

// SetWebsocketInitTimeout shortens how long a WebSocket may wait before connection_init, for tests.
func SetWebsocketInitTimeout(s *Server, d time.Duration) { s.ws.initTimeout = d }
