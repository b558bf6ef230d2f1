package trap

import (
	"context"
	"time"

	"github.com/flytrap/flytrap/decoy"
	"github.com/flytrap/flytrap/ent/hit"
	"github.com/flytrap/flytrap/ent/privacy"
	"github.com/flytrap/flytrap/ids"
)

// findAWSKeys resolves the planted AWS access key ids in a request's text (a SigV4
// Authorization header's Credential=AKIA…, an X-Amz-Credential query, a body) to the
// hits that served them. An id names its hit's millisecond (decoy.ParseAWSKeyID); only
// ids naming a plausible time cost a lookup, by primary key, of that millisecond's hits of
// the organization, and only the one whose tag matches counts.
//
// The secret access key carries the same pointer (decoy.ParseAWSSecret) and is found the
// same way wherever it is pasted (a query, a form, a JSON body, a header, a cookie); its
// match is checked against its whole MAC.
func (e *Engine) findAWSKeys(ctx context.Context, org, text string, now time.Time) []decoy.TokenRef {
	var out []decoy.TokenRef
	var cands []decoy.AWSKeyRef
	for _, id := range decoy.FindAWSKeyIDs(text) {
		if a, ok := decoy.ParseAWSKeyID(e.key, id); ok {
			cands = append(cands, a)
		}
	}
	for _, s := range decoy.FindAWSSecrets(text) {
		if a, ok := decoy.ParseAWSSecret(e.key, s); ok {
			cands = append(cands, a)
		}
	}
	for _, a := range cands {
		if a.Millis > now.Add(time.Minute).UnixMilli() || a.Millis < now.UnixMilli()-decoy.MaxAWSKeyAge {
			continue
		}
		var lo, hi [16]byte
		for i := range 6 {
			lo[i] = byte(a.Millis >> (40 - 8*i))
			hi[i] = lo[i]
		}
		for i := 6; i < 16; i++ {
			hi[i] = 0xff
		}
		hits, err := e.client.Hit.Query().
			Where(hit.OrgID(org), hit.IDGTE(ids.Format(ids.Hit, lo)), hit.IDLTE(ids.Format(ids.Hit, hi))).
			Limit(64).IDs(privacy.DecisionContext(ctx, privacy.Allow))
		if err != nil {
			e.log.Warn("looking up an AWS key's hit", "err", err)
			continue
		}
		for _, h := range hits {
			if ref, ok := a.Match(e.key, h); ok {
				out = append(out, ref)
				break
			}
		}
	}
	return out
}
