package app

import (
	"context"
	"fmt"
	"regexp"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/ent"
	"github.com/flytrap/flytrap/ent/campaignsession"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ent/session"
	"github.com/flytrap/flytrap/internal/clip"
	"github.com/flytrap/flytrap/stix"
)

// MaxSTIXSessions bounds the sessions of a campaign's STIX export: the most recently active.
const MaxSTIXSessions = 500

var campaignIDPattern = regexp.MustCompile(`^cmp_[0-9a-f]{32}$`)

// SessionSTIX is a STIX 2.1 bundle of one session (package stix says what it holds).
func (a *App) SessionSTIX(ctx context.Context, id string) (map[string]any, error) {
	if err := checkID(id, "ses", "id"); err != nil {
		return nil, err
	}
	s, err := a.ent(ctx).Session.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	obs, err := a.stixSessions(ctx, []*ent.Session{s})
	if err != nil {
		return nil, err
	}
	return stix.Bundle(stix.Export{Sessions: obs, Created: a.now()}), nil
}

// CampaignSTIX is a STIX 2.1 bundle of one campaign (its id, cmp_…, as Campaign.id gives it)
// and its MaxSTIXSessions most recently active stored sessions.
func (a *App) CampaignSTIX(ctx context.Context, id string) (map[string]any, error) {
	if !campaignIDPattern.MatchString(id) {
		return nil, apperr.Invalid("id", "%q is not a campaign id (cmp_ and 32 hex digits)", clip.Mark(id, 64))
	}
	c := a.ent(ctx)
	cp, err := c.Campaign.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	sids, err := c.CampaignSession.Query().Where(campaignsession.CampaignID(id)).
		Order(ent.Desc(campaignsession.FieldLastPromptID)).Limit(MaxSTIXSessions).
		Select(campaignsession.FieldSessionID).Strings(ctx)
	if err != nil {
		return nil, fmt.Errorf("campaign sessions: %w", err)
	}
	var ss []*ent.Session
	if len(sids) > 0 {
		// The campaign was read through the tenant rule: its members are the organization's.
		ss, err = c.Session.Query().Where(session.IDIn(sids...)).Order(ent.Desc(session.FieldLastSeen)).
			All(privacy.DecisionContext(ctx, privacy.Allow))
		if err != nil {
			return nil, fmt.Errorf("campaign sessions: %w", err)
		}
	}
	obs, err := a.stixSessions(ctx, ss)
	if err != nil {
		return nil, err
	}
	return stix.Bundle(stix.Export{Sessions: obs, Created: a.now(), Campaign: &stix.Campaign{
		ID: cp.ID, PromptHash: cp.PromptHash, Operator: cp.Operator, Model: cp.Model,
		FirstSeen: cp.FirstSeen, LastSeen: cp.LastSeen, Sessions: cp.SessionCount,
	}}), nil
}

// stixSessions turns sessions into the export's, with the paths of the traps they triggered.
func (a *App) stixSessions(ctx context.Context, ss []*ent.Session) ([]stix.Session, error) {
	out := make([]stix.Session, 0, len(ss))
	for _, s := range ss {
		refs, err := a.TrapRefs(ctx, s.TrapsTriggered)
		if err != nil {
			return nil, err
		}
		var paths []string
		for _, r := range refs {
			if r.Path != nil {
				paths = append(paths, *r.Path)
			}
		}
		out = append(out, stix.Session{ID: s.ID, SourceIP: s.SourceIP, UserAgent: s.UserAgent,
			Classification: string(s.Classification), Severity: string(s.Severity), Score: s.Score, Hits: s.HitCount,
			FirstSeen: s.FirstSeen, LastSeen: s.LastSeen, Paths: paths})
	}
	return out, nil
}
