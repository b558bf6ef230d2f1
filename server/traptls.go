package server

import (
	"crypto/tls"
	"net"
	"net/http"
	"strconv"

	"golang.org/x/net/http2"

	"github.com/flytrap/flytrap/trap"
	"github.com/flytrap/flytrap/traptls"
)

// TrapServers readies the trap listener on trapLn as Serve runs it: its servers, and for
// each the function that serves it. The first is the trap listener itself (over TLS with
// --trap-tls-cert); with TLS on and httpLn set (--trap-http-addr), the second is the plain
// HTTP beside it. A certificate that does not load stops the start.
func (s *Server) TrapServers(trapLn, httpLn net.Listener) ([]*http.Server, []func() error, error) {
	trapSrv, trapLn := s.TrapServer(), s.TrapListener(trapLn)
	c := &s.cfg.TrapTLS
	if !c.Enabled() {
		return []*http.Server{trapSrv}, []func() error{func() error { return trapSrv.Serve(trapLn) }}, nil
	}
	var getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if c.Auto {
		ports := traptls.AutoPorts{TLS: port(trapLn)}
		if httpLn != nil {
			ports.HTTP = port(httpLn)
		}
		a, err := traptls.NewAuto(c, ports, s.engine.VerifiedHost)
		if err != nil {
			return nil, nil, err
		}
		s.tlsAuto, getCert = a, a.GetCertificate
	} else {
		f, err := traptls.LoadFiles(c.CertFile, c.KeyFile, s.log)
		if err != nil {
			return nil, nil, err
		}
		s.tlsFiles, getCert = f, f.GetCertificate
	}
	// TLS is terminated by traptls.Listen, not net/http, so that the connection's
	// fingerprints see its decrypted bytes; HTTP/2 is served by ServeH2 (docs/decisions.md).
	trapSrv.TLSConfig = traptls.NewConfig(getCert, c.Auto)
	// A stream is a request: at most trapH2Streams at once on one connection, so the
	// connection cap (--trap-max-conns) bounds requests over HTTP/2 nearly as over HTTP/1
	// (x/net's default is 250 streams a connection, each a handler running).
	h2 := &http2.Server{MaxConcurrentStreams: trapH2Streams}
	if err := http2.ConfigureServer(trapSrv, h2); err != nil {
		return nil, nil, err
	}
	trapSrv.Handler = traptls.ServeH2(trapSrv, h2, trapSrv.Handler)
	tlsLn := traptls.Listen(trapLn, trapSrv.TLSConfig)
	servers := []*http.Server{trapSrv}
	serves := []func() error{func() error { return trapSrv.Serve(tlsLn) }}
	if httpLn == nil {
		return servers, serves, nil
	}
	httpSrv := s.TrapServer()
	httpSrv.Handler = traptls.Plain(c, strconv.Itoa(port(trapLn)), s.trapHandler)
	if s.tlsAuto != nil {
		httpSrv.Handler = s.tlsAuto.HTTPChallenge(httpSrv.Handler)
	}
	plainLn := trap.WrapListener(trap.LimitListener(httpLn, s.trapMaxConns(), s.log)) // a cap of its own
	return append(servers, httpSrv), append(serves, func() error { return httpSrv.Serve(plainLn) }), nil
}

// port is the port ln is bound to.
func port(ln net.Listener) int {
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	n, _ := strconv.Atoi(p)
	return n
}

// TrapTLSFiles is the trap listener's certificate of its own once TrapServers loaded it, or nil.
func (s *Server) TrapTLSFiles() *traptls.Files { return s.tlsFiles }

// trapH2Streams is how many requests one HTTP/2 connection to the trap listener may have
// in flight: browsers open up to 6 connections' worth of parallel requests on one, agents fewer.
const trapH2Streams = 16
