// Package server wires a Flytrap instance together: its configuration (every setting
// declared once, settings.go), the API listener's routes composed from the middleware of
// httpx, the authentication of auth and the GraphQL transport of gqltransport, the trap
// listener, health checks and graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/flytrap/flytrap/crawler"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"entgo.io/ent/dialect"

	"github.com/flytrap/flytrap/app"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/graph"
	"github.com/flytrap/flytrap/proxy"
	"github.com/flytrap/flytrap/server/auth"
	"github.com/flytrap/flytrap/server/gqltransport"
	"github.com/flytrap/flytrap/server/httpx"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/trap"
	"github.com/flytrap/flytrap/traptls"
	"github.com/flytrap/flytrap/webhook"
)

// Server is one Flytrap instance.
type Server struct {
	cfg      Config
	db       *store.DB
	log      *slog.Logger
	auth     *auth.Authenticator
	usage    *auth.KeyUsage
	jwt      *auth.JWTVerifier
	app      *app.App
	resolver *graph.Resolver
	handler  http.Handler

	ws       *gqltransport.WebSocket
	broker   *event.Broker
	engine   *trap.Engine
	notifier *event.Notifier // nil on SQLite: one instance
	limiter  *rateLimiter
	slots    httpx.Slots         // API requests served at once (bulkheads.go)
	tarpit   atomic.Int64        // refusals over the rate held back (overRate)
	gate     *httpx.ConnGate     // unauthenticated API connections
	fails    *httpx.AuthFailures // failed authentications per client address
	ready    *readiness
	webhooks *webhook.Dispatcher
	crawlers *crawler.Verifier  // nil: --crawler-dns=false
	ranges   *crawler.Refresher // the published crawler range lists
	metrics  *metrics
	stopping context.Context // done once the service begins to shut down
	stop     context.CancelFunc

	// trapHandler answers the trap listener: the engine, or the proxy in front of an upstream.
	trapHandler http.Handler
	trapConns   atomic.Pointer[trap.ConnLimiter] // set by TrapListener
	tlsFiles    *traptls.Files                   // the trap listener's certificate of its own, set by TrapServers
	tlsAuto     *traptls.Auto                    // --trap-tls auto, set by TrapServers
}

// New builds a server over an open database. ctx bounds background work started
// here (the identity provider's key refresh).
func New(ctx context.Context, cfg Config, db *store.DB, log *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, db: db, log: log}
	s.stopping, s.stop = context.WithCancel(context.Background())
	if cfg.JWT.Enabled() {
		v, err := auth.NewJWTVerifier(ctx, cfg.JWT)
		if err != nil {
			return nil, fmt.Errorf("identity provider: %w", err)
		}
		s.jwt = v
	}
	s.usage = auth.NewKeyUsage(db.Client, log)
	s.auth = auth.NewAuthenticator(db.Client, s.jwt, s.usage, log)
	s.limiter = newRateLimiter(cfg.RateLimit, cfg.RateBurst)
	s.slots = httpx.NewSlots(cfg.APIConcurrency())
	s.gate = httpx.NewConnGate(cfg.MaxUnauthConns, log)
	s.fails = httpx.NewAuthFailures(cfg.AuthFailureRate, cfg.AuthFailureBurst)
	s.ready = newReadiness(db, log)
	s.broker = event.NewBroker(db.Client, log, cfg.EventPollInterval)
	s.app = app.New(db.Client, s.broker, time.Now)
	s.app.SetMaxStreamsPerOrg(cfg.MaxStreamsPerOrg)
	s.app.Manual = cfg.WebhookManual
	s.app.WebhookNetwork = webhook.Guard{AllowPrivate: cfg.Webhook.AllowPrivate, Allow: cfg.Webhook.AllowCIDRs}
	s.app.DetailLimit, s.app.DetailBytes = cfg.SessionDetailLimit, cfg.SessionDetailBytes
	s.resolver = graph.NewResolver(s.app, log)
	s.resolver.CredentialCheck = cfg.StreamHeartbeat // as SSE streams do (rest.Options.Heartbeat)
	s.resolver.Storage = s.storageReport
	s.ws = s.newWebSocket()
	tcfg := cfg.Trap
	var err error
	if tcfg.Journal, err = journalDir(cfg.Trap.Journal, db, cfg.TrapAddr); err != nil {
		return nil, err
	}
	if cfg.Trap.Journal == "" && db.Dialect == dialect.Postgres {
		for _, d := range trap.OrphanJournals(tcfg.Journal) {
			s.log.Warn("another hit journal of this database holds hits not stored yet (an instance with another --trap-addr left it): start one instance with --hit-journal set to it", "dir", d)
		}
	}
	if off, err := db.AutovacuumOff(ctx); err != nil {
		return nil, err
	} else if off {
		s.log.Warn("PostgreSQL's autovacuum is off: every hit updates its session, and the dead row versions stay in the sessions indexes until VACUUM runs, slowing each sessions list (docs/operations.md): turn autovacuum on, or run VACUUM sessions often")
	}
	if s.crawlers, err = crawler.NewVerifier(cfg.Crawler.DNS); err != nil {
		return nil, err
	}
	tcfg.Crawlers, tcfg.CrawlerDNSBudget = s.crawlers, cfg.Crawler.DNS.Budget
	// The lists are fetched through the instance's outbound guard, as webhooks are.
	s.ranges = crawler.NewRefresher(cfg.Crawler.Refresh, webhook.Guard{AllowPrivate: cfg.Webhook.AllowPrivate, Allow: cfg.Webhook.AllowCIDRs}, db.Client, log)
	engine, err := trap.New(ctx, tcfg, db.Trap, db.Dialect, log) // its own pool: no API caller takes it
	if err != nil {
		return nil, fmt.Errorf("trap engine: %w", err)
	}
	s.engine = engine
	s.trapHandler = engine
	if cfg.Proxy.Upstream != nil {
		pc := cfg.Proxy
		pc.TrustedProxies = cfg.Trap.TrustedProxies
		s.trapHandler = proxy.New(pc, engine, log)
	}
	s.resolver.Previewer = engine.Preview
	s.resolver.TokenKey = engine.Key
	if db.Dialect == dialect.Postgres {
		s.notifier = event.NewNotifier(db.DSN, s.broker, log)
		s.notifier.OnRoutesChanged(engine.InvalidateRoutes)
	}
	wcfg := cfg.Webhook
	wcfg.PublicURL = cfg.PublicURL
	s.webhooks = webhook.New(db.Client, db.Dialect, wcfg, log, time.Now)
	s.metrics = newMetrics(s)
	s.registerHooks()
	s.handler = s.routes()
	return s, nil
}

// LiveSubscribers counts the open event streams and subscriptions of this instance.
func (s *Server) LiveSubscribers() int { return s.broker.Subscribers() }

// TrapHandler is the trap listener's handler.
func (s *Server) TrapHandler() http.Handler { return s.trapHandler }

// Engine is the detection engine behind the trap listener.
func (s *Server) Engine() *trap.Engine { return s.engine }

// Webhooks is the instance's webhook dispatcher.
func (s *Server) Webhooks() *webhook.Dispatcher { return s.webhooks }

// APIServer is the API listener's http.Server: the router behind timeouts that
// slow clients cannot stretch and a cap on connections that have not authenticated.
// Event streams and WebSockets take their connection over and manage its deadlines.
func (s *Server) APIServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.APIReadHeaderTimeout,
		ReadTimeout:       s.cfg.APIReadTimeout,
		IdleTimeout:       s.cfg.APIIdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext:       s.gate.ConnContext,
		ConnState:         s.gate.ConnState,
	}
}

// TrapServer is the trap listener's http.Server; serve it on a TrapListener.
func (s *Server) TrapServer() *http.Server {
	return &http.Server{
		Handler:           s.trapHandler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext:       trap.ConnContext,
		ConnState:         trap.ConnState, // which connections are idle, for TrapListener's cap
	}
}

// Handler is the API listener's handler.
func (s *Server) Handler() http.Handler { return s.handler }

// FlushUsage writes recorded API key usage now.
func (s *Server) FlushUsage(ctx context.Context) error { return s.usage.Flush(ctx) }

// Start runs the background work of the instance (event broker, key usage writer)
// until ctx ends; the returned function waits for it to finish.
func (s *Server) Start(ctx context.Context) (wait func()) {
	s.ensurePartitions(ctx) // before the listeners take hits
	var wg sync.WaitGroup
	wg.Go(func() { s.usage.Run(ctx, s.cfg.LastUsedInterval) })
	wg.Go(func() { s.engine.Run(ctx) })
	wg.Go(func() { s.webhooks.Run(ctx) })
	wg.Go(func() { s.runRetention(ctx) })
	wg.Go(func() { s.runPartitions(ctx) })
	wg.Go(func() { s.watchDisk(ctx) })
	wg.Go(func() { s.ranges.Run(ctx) })
	if s.notifier != nil {
		wg.Go(func() {
			if err := s.notifier.Run(ctx); err != nil {
				s.log.Error("listening for other instances' changes", "err", err)
			}
		})
	}
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
func (s *Server) Stop() {
	s.stop()
	s.ws.Close()
	if s.tlsAuto != nil {
		s.tlsAuto.Stop()
	}
}

// Listeners are the API and trap listeners of an instance, bound before anything
// else happens so that a taken port stops a first start before it writes anything.
// TrapHTTP is the trap listener's plain HTTP beside its TLS (--trap-http-addr), or nil.
type Listeners struct {
	API, Trap, TrapHTTP net.Listener
}

// Listen binds cfg.APIAddr and cfg.TrapAddr.
func Listen(cfg Config) (*Listeners, error) {
	apiLn, err := net.Listen("tcp", cfg.APIAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (--api-addr): %w", cfg.APIAddr, err)
	}
	trapLn, err := net.Listen("tcp", cfg.TrapAddr)
	if err != nil {
		apiLn.Close()
		return nil, fmt.Errorf("listen on %s (--trap-addr): %w", cfg.TrapAddr, err)
	}
	l := &Listeners{API: apiLn, Trap: trapLn}
	if a := cfg.TrapTLS.HTTPAddr; a != "" {
		if l.TrapHTTP, err = net.Listen("tcp", a); err != nil {
			l.Close()
			return nil, fmt.Errorf("listen on %s (--trap-http-addr): %w", a, err)
		}
	}
	return l, nil
}

// Close closes the listeners (Serve does it when it ends).
func (l *Listeners) Close() {
	l.API.Close()
	l.Trap.Close()
	if l.TrapHTTP != nil {
		l.TrapHTTP.Close()
	}
}

// Run serves the API on cfg.APIAddr and the traps on cfg.TrapAddr until ctx ends,
// then stops gracefully: listeners stop taking requests, requests in flight finish
// (their hits are written), the hit queue is drained, streams end.
// ready, if set, receives the bound addresses once both listeners are up.
func (s *Server) Run(ctx context.Context, ready func(api, trap net.Addr)) error {
	ln, err := Listen(s.cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln, ready)
}

// Serve is Run on listeners bound beforehand with Listen.
func (s *Server) Serve(ctx context.Context, ln *Listeners, ready func(api, trap net.Addr)) error {
	apiLn, trapLn := ln.API, ln.Trap
	apiSrv := s.APIServer()
	apiSrv.RegisterOnShutdown(s.Stop)
	trapSrvs, serveTrap, err := s.TrapServers(trapLn, ln.TrapHTTP)
	if err != nil {
		ln.Close()
		return err
	}
	servers := append([]*http.Server{apiSrv}, trapSrvs...)
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	if s.tlsFiles != nil {
		go s.tlsFiles.Watch(bgCtx, s.cfg.TrapTLS.FilesCheck)
	}
	wait := s.Start(bgCtx)
	stopped := false       // a graceful stop: both listeners shut down cleanly
	var stopping time.Time // when the stop began
	defer func() {
		stopBackground()
		wait()
		if s.jwt != nil {
			s.jwt.Close()
		}
		if stopped {
			// After the background work (webhook attempts in flight, batched hits) has finished.
			s.log.Info("stopped", "shutdown_ms", time.Since(stopping).Milliseconds())
		}
	}()

	errc := make(chan error, len(servers))
	go func() { errc <- apiSrv.Serve(apiLn) }()
	for _, serve := range serveTrap {
		go func() { errc <- serve() }()
	}
	s.log.Info("listening", "api", apiLn.Addr().String(), "traps", trapLn.Addr().String(), "config", s.cfg.String())
	if ready != nil {
		ready(apiLn.Addr(), trapLn.Addr())
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down")
	stopping = time.Now()
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Go(func() {
			if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				s.log.Warn("shutting a listener down", "err", err)
			}
		})
	}
	wg.Wait()
	for range servers {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	stopped = true
	return nil
}
