package app

import (
	"context"

	"github.com/flytrap/flytrap/apperr"
	"github.com/flytrap/flytrap/viewer"
)

// CheckSiteScope refuses a deploy key (viewer.SiteScoped) what is not its site's traps:
// what names the refused action. The storage rules refuse it too (ent/schema/policy.go);
// the use cases that read with SQL of their own or live ask first, for a clear answer.
func CheckSiteScope(ctx context.Context, what string) error {
	if v, ok := viewer.FromContext(ctx); ok && v.SiteScoped() {
		return apperr.New(apperr.KindForbidden, "a deploy key (limited to the traps of site "+v.SiteID+") cannot "+what)
	}
	return nil
}
