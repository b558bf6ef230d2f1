// Package server wires a Flytrap instance together: configuration, the API
// listener with its middleware (request ids, logging, body limits,
// authentication), the GraphQL handler, health checks and graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/store"
)

// Server is one Flytrap instance.
type Server struct {
	cfg      Config
	db       *store.DB
	log      *slog.Logger
	auth     *Authenticator
	usage    *keyUsage
	jwt      *JWTVerifier
	resolver *graph.Resolver
	handler  http.Handler

	websocketOrigins gorillaWebsocket
	broker           *event.Broker
	limiter          *rateLimiter
	stopping         chan struct{}
	stopOnce         sync.Once
}

// New builds a server over an open database. ctx bounds background work started
// here (the identity provider's key refresh).
func New(ctx context.Context, cfg Config, db *store.DB, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, db: db, log: log, stopping: make(chan struct{})}
	if cfg.JWT.Enabled() {
		v, err := NewJWTVerifier(ctx, cfg.JWT)
		if err != nil {
			return nil, fmt.Errorf("identity provider: %w", err)
		}
		s.jwt = v
	}
	s.usage = newKeyUsage(db.Client, log)
	s.auth = NewAuthenticator(db.Client, s.jwt, s.usage)
	s.resolver = graph.NewResolver(db.Client, time.Now)
	s.limiter = newRateLimiter(cfg.RateLimit, cfg.RateBurst)
	s.broker = event.NewBroker(db.Client, log, cfg.EventPollInterval)
	s.websocketOrigins = gorillaWebsocket{allowedOrigins: cfg.AllowedOrigins}
	s.handler = s.routes()
	return s, nil
}

// Handler is the API listener's handler.
func (s *Server) Handler() http.Handler { return s.handler }

// FlushUsage writes recorded API key usage now.
func (s *Server) FlushUsage(ctx context.Context) error { return s.usage.Flush(ctx) }

// Start runs the background work of the instance (event broker, key usage writer)
// until ctx ends; the returned function waits for it to finish.
func (s *Server) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() { s.usage.Run(ctx, s.cfg.LastUsedInterval) })
	wg.Go(func() {
		if err := s.broker.Run(ctx); err != nil {
			s.log.Error("event broker stopped", "err", err)
		}
	})
	select { // live delivery is ready before the listener takes requests
	case <-s.broker.Ready():
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		s.log.Warn("the event broker is slow to start")
	}
	return wg.Wait
}

// Stop ends open streams; Run calls it when shutting down.
func (s *Server) Stop() { s.stopOnce.Do(func() { close(s.stopping) }) }

// Run serves the API on cfg.APIAddr until ctx ends, then stops gracefully.
// ready, if set, receives the bound address once the listener is up.
func (s *Server) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", s.cfg.APIAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.APIAddr, err)
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	wait := s.Start(bgCtx)
	defer func() {
		stopBackground()
		wait()
		if s.jwt != nil {
			s.jwt.Close()
		}
	}()
	srv.RegisterOnShutdown(s.Stop)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("API listening", "addr", ln.Addr().String(), "config", s.cfg.String())
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shut down API: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
