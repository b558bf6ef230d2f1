package httpx

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flytrap/flytrap/apperr"
)

// syncBuffer is a log sink handlers on other goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestDeadlinePanics: a handler's panic under the deadline middleware is answered as
// any other (500, logged where it happened), and one after the deadline is logged, not fatal.
func TestDeadlinePanics(t *testing.T) {
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fail := func(w http.ResponseWriter, e *apperr.Error) { http.Error(w, e.Message(nil), e.Status()) }
	deadline := func(h http.Handler) http.Handler {
		return RecoverPanics(log, fail, Deadline(100*time.Millisecond, log, fail, h))
	}

	h := deadline(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(logs.String(), "deadline_test.go") {
		t.Fatalf("status %d; the log does not show where the panic happened:\n%s", rec.Code, logs.String())
	}

	release := make(chan struct{})
	h = deadline(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		<-release
		panic("late boom")
	}))
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "request-timeout") {
		t.Fatalf("past the deadline: %d %s", rec.Code, rec.Body)
	}
	close(release)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "panic after the request's deadline"); {
		if time.Now().After(deadline) {
			t.Fatalf("the late panic was not logged:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
