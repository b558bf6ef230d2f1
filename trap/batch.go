package trap

import (
	"context"
	"fmt"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/detect"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/event"
	"github.com/flytrap/flytrap/store"
	"github.com/flytrap/flytrap/tally"
)

// writeBatch records a batch of hits in one transaction: sessions found or made,
// hits, signals and prompts inserted, sessions judged, threat events appended.
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
	hits := make([][]any, 0, len(batch))
	var signals []*ent.SignalCreate
	var prompts []*ent.PromptCreate
	for _, j := range batch {
		rec := j.rec
		s, err := e.sessionFor(ctx, c, rec, sources, sessions)
		if err != nil {
			return err
		}
		if _, seen := sessions[s.id]; !seen {
			sessions[s.id] = s
			order = append(order, s)
		}
		next, out := detect.Observe(s.Session, e.observation(rec, sources))
		s.observed(next, out)
		names := make([]string, 0, len(out.Firings))
		for _, f := range out.Firings {
			names = append(names, f.Name)
			sc := c.Signal.Create().SetOrgID(rec.org).SetSessionID(s.id).SetHitID(rec.id).SetName(f.Name).
				SetTripwire(detect.IsTripwire(f.Name)).SetPlacement(f.Placement).SetSourceHitID(f.Source).
				SetDetail(bound(f.Detail, 2048)).SetCreatedAt(rec.receivedAt)
			if f.Delay != nil {
				sc.SetDelayMs(*f.Delay)
			}
			signals = append(signals, sc)
		}
		for _, p := range out.Prompts {
			prompts = append(prompts, c.Prompt.Create().SetOrgID(rec.org).SetSessionID(s.id).SetHitID(rec.id).
				SetText(p.Prompt.Text).SetHash(p.Prompt.Hash).SetModel(bound(p.Prompt.Model, 100)).
				SetOperator(bound(p.Prompt.Operator, 200)).SetSource(p.Source).SetCreatedAt(rec.receivedAt))
		}
		if rec.rowErr != nil {
			return rec.rowErr
		}
		sigs, err := signalsJSON(names)
		if err != nil {
			return err
		}
		rec.row[hitColSession], rec.row[hitColSignals] = s.id, sigs
		hits = append(hits, rec.row)
	}
	threats := make([]string, len(order))
	var created, touched []*sess // new sessions; stored ones whose only change is a later last_seen and more hits
	for i, s := range order {
		threats[i] = threatType(s)
		switch {
		case s.row == nil:
			created = append(created, s)
		case !s.dirty && s.verdict == s.stored && s.addTrips == 0 && s.addProms == 0:
			touched = append(touched, s)
		default:
			if err := e.saveSession(ctx, c, s); err != nil {
				return err
			}
		}
	}
	if err := e.createSessions(ctx, c, created); err != nil {
		return err
	}
	if err := e.touchSessions(ctx, c, touched); err != nil {
		return err
	}
	if err := e.insertHits(ctx, c, hits); err != nil {
		return err
	}
	// The hourly hit counters, written at commit (the session counters follow the session
	// rows through ent's hook): tally package, docs/counters.md.
	counts := tally.Pending(tx)
	for _, j := range batch {
		trapID := ""
		if j.rec.trap != nil {
			trapID = j.rec.trap.ID
		}
		counts.Hit(j.rec.org, trapID, j.rec.receivedAt.Unix()/3600)
	}
	if len(signals) > 0 {
		if err := c.Signal.CreateBulk(signals...).Exec(ctx); err != nil {
			return fmt.Errorf("insert signals: %w", err)
		}
	}
	if len(prompts) > 0 {
		if err := c.Prompt.CreateBulk(prompts...).Exec(ctx); err != nil {
			return fmt.Errorf("insert prompts: %w", err)
		}
	}
	for i, s := range order {
		if threats[i] == "" {
			continue
		}
		if _, err := event.Append(ctx, tx, s.org, threats[i], ThreatData(s)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, s := range order {
		e.visits.setSession(s.key, visitorSession{id: s.id, lastSeen: s.Last})
		s.committed()
		e.recent.Add(s.id, s)
	}
	e.written.Add(int64(len(batch)))
	return nil
}

// observation is a hit as the detection engine sees it: its tokens resolved to the
// stored hits that served them (only this organization's), purposes and placements named.
func (e *Engine) observation(rec *hitRecord, sources map[string]sourceHit) detect.Observation {
	o := detect.Observation{
		At: rec.receivedAt, Method: rec.method, Host: rec.host, Path: rec.path, Query: rec.query, Body: rec.body,
		Headers: rec.headers, IP: rec.ip, UA: rec.ua, Kind: rec.kind, Tool: rec.tool, ToolArgs: rec.toolArgs,
		Disallow: rec.disallow, Linked: rec.linked, Known: rec.known,
	}
	if rec.trap != nil {
		o.TrapID, o.TrapType = rec.trap.ID, string(rec.trap.Type)
	}
	for _, ref := range rec.refs {
		src, ok := e.tokenSource(rec, ref, sources)
		if !ok {
			continue
		}
		t := detect.TokenUse{SourceHit: src.hit, SourceAt: src.at, Placement: fmt.Sprintf("%s#%d", src.placement, ref.Index), Visible: src.visible}
		switch ref.Purpose {
		case decoy.Callback:
			t.Use = detect.UseCallback
		case decoy.Challenge:
			t.Use = detect.UseChallenge
			if decoy.ChallengeAnswered(e.key, ref, rec.query+"\n"+rec.body) {
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
