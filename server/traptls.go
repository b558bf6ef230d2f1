package server

import (
	"net"
	"net/http"

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
	f, err := traptls.LoadFiles(c.CertFile, c.KeyFile, s.log)
	if err != nil {
		return nil, nil, err
	}
	s.tlsFiles = f
	trapSrv.TLSConfig = traptls.NewConfig(f.GetCertificate)
	servers := []*http.Server{trapSrv}
	serves := []func() error{func() error { return trapSrv.ServeTLS(trapLn, "", "") }}
	if httpLn == nil {
		return servers, serves, nil
	}
	_, port, _ := net.SplitHostPort(trapLn.Addr().String())
	httpSrv := s.TrapServer()
	httpSrv.Handler = traptls.Plain(c, port, s.trapHandler)
	plainLn := trap.WrapListener(trap.LimitListener(httpLn, s.trapMaxConns(), s.log)) // a cap of its own
	return append(servers, httpSrv), append(serves, func() error { return httpSrv.Serve(plainLn) }), nil
}

// TrapTLSFiles is the trap listener's certificate of its own once TrapServers loaded it, or nil.
func (s *Server) TrapTLSFiles() *traptls.Files { return s.tlsFiles }
