package event

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hook"
)

// notifyChannel is the PostgreSQL channel instances on one database talk on.
const notifyChannel = "flytrap"

// Notification payloads.
const (
	notifyEvents = "e"  // an event was written
	notifyRoutes = "r"  // a trap or site changed
	notifyKey    = "k:" // an API key was revoked; the key id follows
)

// Notifier joins instances that share a PostgreSQL database. Changes send a NOTIFY
// in their own transaction (so it is delivered at commit, or never); every instance
// LISTENs and wakes its broker, ends a revoked key's streams, or reloads trap routes.
// It is only a wake-up: the rows stay the source of truth, and a missed notification
// or a lost connection costs latency (the broker also polls, and re-reads after a
// reconnect), never an event.
type Notifier struct {
	dsn    string
	log    *slog.Logger
	broker *Broker

	mu     sync.Mutex
	routes []func()
}

// NewNotifier returns the listener side; its hooks (RegisterHooks) send the notifications.
func NewNotifier(dsn string, broker *Broker, log *slog.Logger) *Notifier {
	return &Notifier{dsn: dsn, log: log, broker: broker}
}

// RegisterHooks makes client's writes NOTIFY the other instances, in their transactions:
// new events, trap and site changes (their routes), API key revocations.
func (n *Notifier) RegisterHooks(client *ent.Client) {
	client.Event.Use(hook.On(notify(func(ent.Mutation) string { return notifyEvents }), ent.OpCreate))
	routes := notify(func(ent.Mutation) string { return notifyRoutes })
	client.Trap.Use(hook.On(routes, ent.OpCreate|ent.OpUpdateOne|ent.OpDeleteOne))
	client.Site.Use(hook.On(routes, ent.OpCreate|ent.OpUpdateOne|ent.OpDeleteOne))
	client.APIKey.Use(hook.On(notify(func(m ent.Mutation) string {
		km, ok := m.(*ent.APIKeyMutation)
		if !ok {
			return ""
		}
		if _, revoked := km.RevokedAt(); !revoked {
			return ""
		}
		id, _ := km.ID()
		return notifyKey + id
	}), ent.OpUpdateOne))
}

// OnRoutesChanged registers f to run when another instance changes a trap or site.
func (n *Notifier) OnRoutesChanged(f func()) {
	n.mu.Lock()
	n.routes = append(n.routes, f)
	n.mu.Unlock()
}

// notify is a hook that sends payload(m) on the mutation's connection, inside its transaction.
func notify(payload func(ent.Mutation) string) ent.Hook {
	return func(next ent.Mutator) ent.Mutator {
		return ent.MutateFunc(func(ctx context.Context, m ent.Mutation) (ent.Value, error) {
			v, err := next.Mutate(ctx, m)
			if err != nil {
				return v, err
			}
			p := payload(m)
			c, ok := m.(interface{ Client() *ent.Client })
			if p == "" || !ok {
				return v, nil
			}
			if _, err := c.Client().ExecContext(ctx, "SELECT pg_notify($1, $2)", notifyChannel, p); err != nil {
				return nil, err
			}
			return v, nil
		})
	}
}

// Run listens until ctx ends.
func (n *Notifier) Run(ctx context.Context) error {
	l := pq.NewListener(n.dsn, 50*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, err error) {
		if err != nil {
			n.log.Warn("database listener", "event", ev, "err", err)
		}
	})
	defer l.Close()
	if err := l.Listen(notifyChannel); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case note := <-l.Notify:
			if note == nil {
				// Reconnected: notifications may have been missed meanwhile. Catch up.
				n.broker.Wake()
				n.routesChanged()
				continue
			}
			switch p := note.Extra; {
			case p == notifyEvents:
				n.broker.Wake()
			case p == notifyRoutes:
				n.routesChanged()
			case strings.HasPrefix(p, notifyKey):
				n.broker.RevokeKey(strings.TrimPrefix(p, notifyKey))
			}
		case <-time.After(90 * time.Second):
			if err := l.Ping(); err != nil { // checks the connection while idle; the listener reconnects
				n.log.Warn("database listener ping", "err", err)
			}
		}
	}
}

func (n *Notifier) routesChanged() {
	n.mu.Lock()
	fs := n.routes
	n.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// NotifyRevoked tells every instance listening on db that key was revoked; for
// revocations made outside a server (the command line).
func NotifyRevoked(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, key string) error {
	_, err := db.ExecContext(ctx, "SELECT pg_notify($1, $2)", notifyChannel, notifyKey+key)
	return err
}
