package ent

import "github.com/flytrap/flytrap/ent/session"

// TxKey identifies the transaction tx belongs to: every *Tx that mutations running in one
// transaction hand out (SessionMutation.Tx and the like make a new *Tx each call) shares it.
// The tally package keeps a transaction's pending counter changes by it.
func TxKey(tx *Tx) any { return tx.config.driver }

// Dialect is the SQL dialect c talks (dialect.SQLite or dialect.Postgres).
func (c *Client) Dialect() string { return c.driver.Dialect() }

// StoredQuery queries the stored rows an update or a delete m describes will change
// (the tally package reads them before the change, to move their counts).
func (m *SessionMutation) StoredQuery() *SessionQuery {
	q := m.Client().Session.Query().Where(m.predicates...)
	if id, ok := m.ID(); ok {
		q.Where(session.ID(id))
	}
	return q
}

// TxKey is TxKey of the transaction m runs in, or nil outside one; unlike m.Tx it
// allocates nothing (the writer's path calls it for every session it changes).
func (m *SessionMutation) TxKey() any {
	if _, ok := m.driver.(*txDriver); ok {
		return m.driver
	}
	return nil
}

// TxKey is TxKey of the transaction m runs in, or nil outside one.
func (m *HitMutation) TxKey() any {
	if _, ok := m.driver.(*txDriver); ok {
		return m.driver
	}
	return nil
}

// TxKey is TxKey of the transaction m runs in, or nil outside one.
func (m *PromptMutation) TxKey() any {
	if _, ok := m.driver.(*txDriver); ok {
		return m.driver
	}
	return nil
}
