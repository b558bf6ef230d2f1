package store_test

import (
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// Organizations and sites stored before the webhook network and host verification existed
// have no value for them: the schema upgrade must take such rows (a NOT NULL JSON column has
// no SQL default and failed on them), and they read as "nothing allowed, not verified".
func TestUpgradeKeepsRowsWithoutNewFields(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		org := db.Client.Organization.Create().SetName("old").SaveX(sys)
		site := db.Client.Site.Create().SetOrgID(org.ID).SetName("old").SetHost("old.example").SaveX(sys)
		// As a row written by the previous version: no allow-list at all.
		if _, err := db.SQL.ExecContext(t.Context(), `UPDATE organizations SET webhook_allow_cidrs = NULL`); err != nil {
			t.Fatal(err)
		}
		db.Close()

		db, err = store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatalf("reopen over a row without an allow-list: %v", err)
		}
		defer db.Close()
		o := db.Client.Organization.GetX(sys, org.ID)
		if o.WebhookAllowPrivate || o.WebhookShowPrivateResponses || len(o.WebhookAllowCidrs) != 0 {
			t.Fatalf("old organization reads %+v", o)
		}
		if s := db.Client.Site.GetX(sys, site.ID); s.HostVerified {
			t.Fatal("an old host reads as verified")
		}
	})
}
