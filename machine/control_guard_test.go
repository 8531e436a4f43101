package machine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/security"
)

// A tenant admin may create in its tenant the moment the tenant exists,
// whichever machine it asks first: the rule is judged by the coordinator's
// desk, whose fold holds every change it made, not by the machine that
// took the call, whose fold may not hold the tenant yet. Each round makes
// a fresh tenant and at once asks every machine, one client per machine.
func TestATenantAdminCreatesTheMomentItsTenantExists(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := security.OpRead | security.OpWrite | security.OpAdmin
	for round := range 16 {
		name := fmt.Sprintf("t%d", round)
		id, err := admin.New(root).CreateTenant(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := c.CA.IssueToken(security.Claims{Subject: name + "-admin",
			Scopes:   []security.Scope{{Tenant: id, Ops: all}},
			IssuedAt: time.Now().Unix(), Expires: time.Now().Add(time.Hour).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		for i, addr := range c.Addrs() {
			cl, err := client.Dial(ctx, []string{addr}, client.WithCAFile(c.CAFile), client.WithToken(tok))
			if err != nil {
				t.Fatal(err)
			}
			_, err = admin.New(cl).CreateJournal(ctx, fmt.Sprintf("%s/j%d", name, i))
			cl.Close()
			if err != nil {
				t.Fatalf("round %d: the admin of %s creates through %s: %v", round, name, addr, err)
			}
		}
	}
}

// A token names its tenant by id. A tenant deleted and made again under
// the same name is another tenant: the old tenant's admin may not create
// in it, though every machine may still fold the old name to the old id.
func TestATenantMadeAgainIsNotTheOldTenantsToAdminister(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	old, err := admin.New(root).CreateTenant(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	all := security.OpRead | security.OpWrite | security.OpAdmin
	oldAdmin := tokenClient(t, ctx, c, security.Scope{Tenant: old, Ops: all})
	if err := admin.New(root).DeleteTenant(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.New(root).CreateTenant(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	_, err = admin.New(oldAdmin).CreateJournal(ctx, "shop/orders")
	mustBeDenied(t, "the old shop's admin creates in the new shop", err)
	mustBeDenied(t, "the old shop's admin deletes in the new shop", admin.New(oldAdmin).DeleteJournal(ctx, "shop/orders"))
}
