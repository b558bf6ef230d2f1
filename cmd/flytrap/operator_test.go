package main

import (
	"strings"
	"testing"

	ft "github.com/flytrap/flytrap/flytraptest"
	"github.com/flytrap/flytrap/store"
)

// The operator lists organizations and sets one's webhook network; only the flags given change.
func TestOrgsListAndWebhookNetwork(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		acme := createOrgCLI(t, dsn, "Acme")
		other := createOrgCLI(t, dsn, "Other\x1b[2Jco")
		out := mustCLI(t, noEnv, "orgs", "list", "--db", dsn)
		if !strings.Contains(out, acme) || !strings.Contains(out, other) || strings.Contains(out, "\x1b") {
			t.Fatalf("orgs list:\n%s", out)
		}
		out = mustCLI(t, noEnv, "orgs", "set-webhook-network", "--db", dsn, "--org", acme, "--allow-cidrs", "10.1.0.0/16, 192.168.7.9 ,10.1.2.3/16")
		if !strings.Contains(out, "10.1.0.0/16,192.168.7.9/32") {
			t.Fatalf("set-webhook-network printed:\n%s", out)
		}
		mustCLI(t, noEnv, "orgs", "set-webhook-network", "--db", dsn, "--org", acme, "--show-private-responses")
		org := func(id string) (private, show bool, cidrs []string) {
			t.Helper()
			db, err := store.Open(t.Context(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			o := db.Client.Organization.GetX(ft.System(), id)
			return o.WebhookAllowPrivate, o.WebhookShowPrivateResponses, o.WebhookAllowCidrs
		}
		if p, s, c := org(acme); p || !s || strings.Join(c, ",") != "10.1.0.0/16,192.168.7.9/32" {
			t.Fatalf("acme: private %t, show %t, cidrs %v", p, s, c)
		}
		if p, s, c := org(other); p || s || len(c) != 0 {
			t.Fatalf("the other organization changed: %t %t %v", p, s, c)
		}
		mustCLI(t, noEnv, "orgs", "set-webhook-network", "--db", dsn, "--org", acme, "--allow-cidrs", "", "--allow-private=true", "--show-private-responses=false")
		if p, s, c := org(acme); !p || s || len(c) != 0 {
			t.Fatalf("acme after reset: private %t, show %t, cidrs %v", p, s, c)
		}
		for _, args := range [][]string{
			{"--org", acme}, // nothing to change
			{"--org", acme, "--allow-cidrs", "10.0.0.0/33"},                // not a CIDR
			{"--org", "nope", "--allow-private"},                           // not an org id
			{"--org", "org_01m817pg1f8bjdanzx5g71dpy4", "--allow-private"}, // no such org
			{"--org", acme, "--allow-private", "extra"},                    // stray word
		} {
			failCLI(t, noEnv, append([]string{"orgs", "set-webhook-network", "--db", dsn}, args...)...)
		}
	})
}

// The operator verifies which organization's site a host routes to: one at a time.
func TestSitesVerify(t *testing.T) {
	ft.ForEachBackend(t, func(t *testing.T, b ft.Backend) {
		dsn := b.DSN(t)
		acme := createOrgCLI(t, dsn, "Acme")
		other := createOrgCLI(t, dsn, "Other")
		db, err := store.Open(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		sys := ft.System()
		a := db.Client.Site.Create().SetOrgID(acme).SetName("shop").SetHost("shop.example.com").SaveX(sys)
		o := db.Client.Site.Create().SetOrgID(other).SetName("shop").SetHost("shop.example.com").SaveX(sys)
		db.Close()

		out := mustCLI(t, noEnv, "sites", "list", "--db", dsn, "--org", acme)
		if !strings.Contains(out, a.ID) || strings.Contains(out, o.ID) || !strings.Contains(out, "false") {
			t.Fatalf("sites list --org:\n%s", out)
		}
		if out := mustCLI(t, noEnv, "sites", "verify", a.ID, "--db", dsn); !strings.Contains(out, "true") {
			t.Fatalf("sites verify printed:\n%s", out)
		}
		err = failCLI(t, noEnv, "sites", "verify", "--db", dsn, o.ID)
		if !strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), "unverify") {
			t.Fatalf("second verification: %v", err)
		}
		mustCLI(t, noEnv, "sites", "unverify", a.ID, "--db", dsn)
		mustCLI(t, noEnv, "sites", "verify", o.ID, "--db", dsn)
		out = mustCLI(t, noEnv, "sites", "list", "--db", dsn)
		verified := func(line string) string { // the VERIFIED column: ID ORG NAME HOST VERIFIED LURES…
			if f := strings.Fields(line); len(f) > 4 {
				return f[4]
			}
			return ""
		}
		for _, line := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(line, a.ID) && verified(line) != "false",
				strings.HasPrefix(line, o.ID) && verified(line) != "true":
				t.Fatalf("sites list:\n%s", out)
			}
		}

		// Lures: flags left out keep their values; bad values are refused with the flag's name.
		out = mustCLI(t, noEnv, "sites", "lures", a.ID, "--db", dsn, "--paths", "/docs/, /blog/", "--rate", "0.25")
		if !strings.Contains(out, "/docs/,/blog/ 25% x2") {
			t.Fatalf("sites lures printed:\n%s", out)
		}
		if out := mustCLI(t, noEnv, "sites", "lures", a.ID, "--db", dsn, "--count", "3"); !strings.Contains(out, "/docs/,/blog/ 25% x3") {
			t.Fatalf("sites lures --count kept nothing else:\n%s", out)
		}
		if out := mustCLI(t, noEnv, "sites", "lures", a.ID, "--db", dsn, "--off"); !strings.HasSuffix(strings.TrimSpace(out), "off") {
			t.Fatalf("sites lures --off:\n%s", out)
		}
		if out := mustCLI(t, noEnv, "sites", "lures", a.ID, "--db", dsn, "--reset"); !strings.Contains(out, "all 100% x2") {
			t.Fatalf("sites lures --reset:\n%s", out)
		}
		for _, bad := range [][]string{{"--rate", "1.5"}, {"--count", "0"}, {"--count", "4"}, {"--paths", "docs"}, {"--paths", "/a b"}} {
			if err := failCLI(t, noEnv, append([]string{"sites", "lures", a.ID, "--db", dsn}, bad...)...); !strings.Contains(err.Error(), bad[0]) {
				t.Errorf("sites lures %v: %v", bad, err)
			}
		}
		failCLI(t, noEnv, "sites", "lures", "--db", dsn, "site_01m817pg1f8bjdanzx5g71dpy4")  // no such site
		failCLI(t, noEnv, "sites", "verify", "--db", dsn)                                    // no id
		failCLI(t, noEnv, "sites", "verify", "--db", dsn, "trp_01m817pg1f8bjdanzx5g71dpy4")  // not a site id
		failCLI(t, noEnv, "sites", "verify", "--db", dsn, "site_01m817pg1f8bjdanzx5g71dpy4") // no such site
		failCLI(t, noEnv, "sites", "bogus", "--db", dsn)
	})
}
