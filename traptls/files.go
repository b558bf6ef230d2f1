package traptls

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Files is a certificate of one's own, read from a PEM chain and key: reloaded when either
// file changes (checked every Config.FilesCheck) or on SIGHUP (Watch). A pair that does not
// load leaves the last good one serving, and is logged.
type Files struct {
	cert, key string
	log       *slog.Logger
	cur       atomic.Pointer[tls.Certificate]
	mu        sync.Mutex // one reload at a time
	stamp     string     // the files' sizes and modification times at the last load (under mu)
}

// LoadFiles reads the pair once: an error here stops the start.
func LoadFiles(certFile, keyFile string, log *slog.Logger) (*Files, error) {
	f := &Files{cert: certFile, key: keyFile, log: log}
	if _, err := f.reload(false); err != nil {
		return nil, err
	}
	return f, nil
}

// GetCertificate is tls.Config.GetCertificate: the pair last loaded.
func (f *Files) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.cur.Load(), nil
}

// Reload reads the pair again, if either file changed since the last load or force;
// it reports whether a new pair now serves.
func (f *Files) Reload(force bool) (bool, error) { return f.reload(force) }

func (f *Files) reload(force bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	stamp, err := f.stampNow()
	if err != nil {
		return false, err
	}
	if !force && stamp == f.stamp {
		return false, nil
	}
	c, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return false, fmt.Errorf("trap-tls-cert/trap-tls-key: %w", err)
	}
	f.stamp = stamp
	f.cur.Store(&c)
	return true, nil
}

func (f *Files) stampNow() (string, error) {
	var out string
	for _, p := range []string{f.cert, f.key} {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("trap-tls-cert/trap-tls-key: %w", err)
		}
		out += fmt.Sprintf("%d/%d;", st.Size(), st.ModTime().UnixNano())
	}
	return out, nil
}

// Watch reloads the pair when the files change (checked every interval) and on SIGHUP,
// until ctx ends.
func (f *Files) Watch(ctx context.Context, interval time.Duration) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		force := false
		select {
		case <-ctx.Done():
			return
		case <-hup:
			force = true
		case <-t.C:
		}
		switch ok, err := f.reload(force); {
		case err != nil:
			f.log.Error("reloading the trap listener's certificate: the last good one keeps serving", "err", err)
		case ok:
			f.log.Info("reloaded the trap listener's certificate", "cert", f.cert)
		}
	}
}
