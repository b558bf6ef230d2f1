package app

import (
	"context"

	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/fingerprint"
)

// ClientStack is what a session's connections proved of its client: one combination of
// fingerprints its hits carried (package fingerprint), the stack family they point to,
// and how many of the hits read carried it.
type ClientStack struct {
	JA4           *string `json:"ja4"`
	H2Fingerprint *string `json:"h2Fingerprint"`
	HeaderOrder   *string `json:"headerOrder"`
	Family        *string `json:"family"`
	Hits          int     `json:"hits"`
}

// Bounds of ClientStacks: the session's newest hits read, the combinations kept.
const (
	maxStackHits = 200
	maxStacks    = 8
)

// ClientStacks are the fingerprint combinations of s's newest maxStackHits hits, most
// recent first, at most maxStacks; hits that proved nothing (plain HTTP/1 with no header
// read) are left out. Three short columns of a bounded run of the session's index.
func (a *App) ClientStacks(ctx context.Context, s *ent.Session) ([]*ClientStack, error) {
	var rows []struct {
		JA4   *string `json:"ja4"`
		H2    *string `json:"h2_fingerprint"`
		Order *string `json:"header_order"`
	}
	hq := s.QueryHits()
	if !s.FirstSeen.IsZero() && !s.LastSeen.Before(s.FirstSeen) { // the days' partitions only (SessionDetail)
		hq = hq.Where(hit.ReceivedAtGTE(s.FirstSeen.Add(-detailSlack)), hit.ReceivedAtLTE(s.LastSeen.Add(detailSlack)))
	}
	err := hq.Order(ent.Desc(hit.FieldReceivedAt), ent.Desc(hit.FieldID)).Limit(maxStackHits).
		Select(hit.FieldJa4, hit.FieldH2Fingerprint, hit.FieldHeaderOrder).Scan(ctx, &rows)
	if err != nil {
		return nil, err
	}
	out := []*ClientStack{}
	index := map[[3]string]*ClientStack{}
	for _, r := range rows {
		k := [3]string{deref(r.JA4), deref(r.H2), deref(r.Order)}
		if k == [3]string{} {
			continue
		}
		if cs := index[k]; cs != nil {
			cs.Hits++
			continue
		}
		if len(out) == maxStacks {
			continue
		}
		cs := &ClientStack{JA4: r.JA4, H2Fingerprint: r.H2, HeaderOrder: r.Order, Hits: 1}
		if f := fingerprint.Family(k[0], k[1], k[2]); f != "" {
			cs.Family = &f
		}
		index[k] = cs
		out = append(out, cs)
	}
	return out, nil
}

// HitStack is the client stack family h's fingerprints point to, or nil.
func HitStack(h *ent.Hit) *string {
	if f := fingerprint.Family(deref(h.Ja4), deref(h.H2Fingerprint), deref(h.HeaderOrder)); f != "" {
		return &f
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
