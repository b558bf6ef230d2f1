package trap

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/record"
	"github.com/flytrap/flytrap/store"
)

// writeBatch records a batch of hits in one transaction: sessions found or made, each hit
// observed (detect.Observe), the lot stored by record.Writer with its counters, threat
// events appended.
func (e *Engine) writeBatch(ctx context.Context, batch []*job) error {
	ctx = store.Prepared(privacy.DecisionContext(ctx, privacy.Allow))
	tx, err := e.client.Tx(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	c := tx.Client()

	sources, err := e.sourceHits(ctx, c, batch)
	if err != nil {
		return err
	}
	sessions := map[string]*sess{}
	var order []*sess
	b := &record.Batch{Hits: make([]*record.Hit, 0, len(batch))}
	for _, j := range batch {
		rec := j.rec
		s, err := e.sessionFor(ctx, c, rec, sources, sessions)
		if err != nil {
			return err
		}
		if _, seen := sessions[s.ID]; !seen {
			sessions[s.ID] = s
			order = append(order, s)
			b.Sessions = append(b.Sessions, &s.Session)
		}
		next, out := detect.Observe(s.Session.Session, e.observation(rec, sources))
		s.Observed(&rec.Hit, next, out)
		b.Hits = append(b.Hits, &rec.Hit)
	}
	threats := make([]string, len(order))
	for i, s := range order {
		threats[i] = threatType(s) // before Record: a report is kept in the session's state
	}
	if err := e.recorder.Record(ctx, tx, b); err != nil {
		return err
	}
	for i, s := range order {
		if threats[i] == "" {
			continue
		}
		if _, err := event.Append(ctx, tx, s.Org, threats[i], ThreatData(s)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, s := range order {
		e.visits.setSession(s.key, visitorSession{id: s.ID, lastSeen: s.Last})
		s.committed()
		e.recent.Add(s.ID, s)
	}
	e.written.Add(int64(len(batch)))
	return nil
}

// observation is a hit as the detection engine sees it: the request as the listener
// observed it, its tokens resolved to the stored hits that served them (only this
// organization's), purposes and placements named.
func (e *Engine) observation(rec *hitRecord, sources map[string]sourceHit) detect.Observation {
	o := rec.Observation
	o.Tokens = nil
	for _, ref := range rec.refs {
		src, ok := e.tokenSource(rec, ref, sources)
		if !ok {
			continue
		}
		t := detect.TokenUse{SourceHit: src.hit, SourceAt: src.at, Placement: fmt.Sprintf("%s#%d", src.placement, ref.Index), Visible: src.visible,
			Lure: src.lure, Carrier: src.carrier}
		switch ref.Purpose {
		case decoy.Callback:
			t.Use = detect.UseCallback
		case decoy.Challenge:
			t.Use = detect.UseChallenge
			if decoy.ChallengeAnswered(e.key, ref, rec.Query+"\n"+rec.Body) {
				t.Answered, t.Answer = true, decoy.ChallengeAnswer(e.key, ref)
			}
		case decoy.Canary:
			t.Use = detect.UseCanary
		case decoy.Sink:
			t.Use = detect.UseSink
		case decoy.Credential, decoy.DatabasePassword, decoy.RedisPassword, decoy.SessionSecret, decoy.AWSAccessKey:
			t.Use, t.Secret = detect.UseCredential, decoy.SecretName(e.key, ref)
		case decoy.Tool:
			t.Use = detect.UseTool
		default:
			t.Use = detect.UseOther
		}
		o.Tokens = append(o.Tokens, t)
	}
	return o
}
