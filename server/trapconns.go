package server

import (
	"net"

	"github.com/flytrap/flytrap/trap"
)

// TrapListener wraps the trap listener's bound socket: a cap on its open connections
// (--trap-max-conns, trap.LimitListener), and nginx's pages for net/http's own errors
// (trap.WrapListener). Serve it with TrapServer, whose ConnState the cap needs.
func (s *Server) TrapListener(ln net.Listener) net.Listener {
	max := s.trapMaxConns()
	if limit := openFileLimit(); limit > 0 && uint64(max+s.cfg.Proxy.UpstreamMaxConns) > limit {
		s.log.Warn("the trap listener's connections and the upstream's may take every file descriptor: lower --trap-max-conns or raise the open-file limit",
			"trap_max_conns", max, "upstream_max_conns", s.cfg.Proxy.UpstreamMaxConns, "open_file_limit", limit)
	}
	l := trap.LimitListener(ln, max, s.log)
	s.trapConns.Store(l)
	return trap.WrapListener(l)
}

// TrapConns is the trap listener's connection cap, once TrapListener made it.
func (s *Server) TrapConns() *trap.ConnLimiter { return s.trapConns.Load() }

// trapMaxConns is --trap-max-conns, or for 0 half the process's open-file limit (Go
// raises the soft limit to the hard one at start), from 64 to 16384: the other half is
// for the upstream, the database, the API listener and files.
func (s *Server) trapMaxConns() int {
	if s.cfg.TrapMaxConns > 0 {
		return s.cfg.TrapMaxConns
	}
	limit := openFileLimit()
	if limit == 0 {
		return 4096
	}
	return int(min(max(limit/2, 64), 16384))
}
