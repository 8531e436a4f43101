package machine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/security"
)

// Attacks on the control plane's grants. Each replays what a holder of a
// credential beyond its role would try, and expects a refusal that
// changes nothing.

// certClient dials the cell with a certificate the cell's CA issued for
// node id (a machine's credentials, used as a client's).
func certClient(t *testing.T, ctx context.Context, c *testcell.Cell, id uint64) *client.Client {
	t.Helper()
	certPEM, keyPEM, err := c.CA.IssueNode(id, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := (&security.CA{Cert: c.CA.Cert}).WriteCA(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeCertFile), certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, security.NodeKeyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := security.LoadNode(dir)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, c.Addrs(), client.WithTLS(n.PeerConfig(0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// tokenClient dials the cell with a token granting scopes.
func tokenClient(t *testing.T, ctx context.Context, c *testcell.Cell, scopes ...security.Scope) *client.Client {
	t.Helper()
	now := time.Now()
	tok, err := c.CA.IssueToken(security.Claims{Subject: "attacker", Scopes: scopes,
		IssuedAt: now.Unix(), Expires: now.Add(time.Hour).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.Dial(ctx, c.Addrs(), client.WithCAFile(c.CAFile), client.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// denied fails the test unless err is the credentials' refusal.
func mustBeDenied(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, client.ErrDenied) {
		t.Errorf("%s: %v, want ErrDenied", what, err)
	}
}

// No machine certificate reads or writes a user's journal: not a
// founder's, not an admitted machine's, not a stranger's the CA issued to
// a machine the cell never admitted. A stranger cannot read the registry or vote in the
// coordinator's election, and a founder cannot fence a live journal.
func TestMachineCertificatesStayInTheirRole(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := admin.New(root).CreateJournal(ctx, "victim")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(ctx, t, root, "victim", "genuine"); err != nil {
		t.Fatal(err)
	}
	reg, err := admin.New(root).Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	founder := c.Machine(0).Record().NodeID
	idle, err := c.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	admitted, err := admin.New(root).AddMachine(ctx, idle.Addr, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []struct {
		name string
		id   uint64
	}{{"a founder's certificate", founder}, {"an admitted machine's certificate", uint64(admitted)},
		{"a stranger's certificate", security.RandomNodeID()}} {
		cl := certClient(t, ctx, c, who.id)
		j := cl.Journal(info.ID)
		_, err := j.Read(ctx, journal.ReadRequest{Journal: info.ID, FromSeq: journal.FirstSeq})
		mustBeDenied(t, who.name+" reads a user's journal", err)
		w := j.NewWriter()
		mustBeDenied(t, who.name+" fences a live user's journal", w.Claim(ctx))
		w.Close()
		_, err = j.Write(ctx, journal.WriteRequest{Journal: info.ID, Seq: 2, Records: [][]byte{[]byte("forged")}})
		mustBeDenied(t, who.name+" writes a user's journal", err)
		_, err = admin.New(cl).CreateJournal(ctx, "forged")
		mustBeDenied(t, who.name+" creates a journal", err)
	}
	stranger := certClient(t, ctx, c, security.RandomNodeID())
	_, err = stranger.Journal(reg.Control).Read(ctx, journal.ReadRequest{Journal: reg.Control, FromSeq: journal.FirstSeq})
	mustBeDenied(t, "a stranger reads the registry", err)
	sw := stranger.Journal(reg.Election).NewWriter()
	mustBeDenied(t, "a stranger claims the election journal", sw.Claim(ctx))
	sw.Close()
	mw := stranger.Journal(reg.Control).NewWriter()
	mustBeDenied(t, "a stranger fences the registry", mw.Claim(ctx))
	mw.Close()

	// Nothing changed: the journal holds its one genuine record and the
	// registry still names it.
	got, err := root.Journal(info.ID).Read(ctx, journal.ReadRequest{Journal: info.ID, FromSeq: journal.FirstSeq})
	if err != nil || len(got.Records) != 1 || string(got.Records[0]) != "genuine" {
		t.Fatalf("the victim holds %q (%v), want the one genuine record", got.Records, err)
	}
	if _, err := root.Resolve(ctx, "victim"); err != nil {
		t.Fatalf("the victim no longer resolves: %v", err)
	}
}

// A token scoped to a tenant administers that tenant's journals and no
// other's; it cannot make tenants or touch the machine pool, and a
// read-only token creates nothing.
func TestTenantTokensStayInTheirTenant(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	shop, err := admin.New(root).CreateTenant(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	bank, err := admin.New(root).CreateTenant(ctx, "bank")
	if err != nil {
		t.Fatal(err)
	}
	vault, err := admin.New(root).CreateJournal(ctx, "bank/vault")
	if err != nil {
		t.Fatal(err)
	}
	all := security.OpRead | security.OpWrite | security.OpAdmin
	shopAdmin := tokenClient(t, ctx, c, security.Scope{Tenant: shop, Ops: all})
	if _, err := admin.New(shopAdmin).CreateJournal(ctx, "shop/orders"); err != nil {
		t.Fatalf("a shop admin creates in shop: %v", err)
	}
	if _, err := appendOne(ctx, t, shopAdmin, "shop/orders", "ok"); err != nil {
		t.Fatalf("a shop admin writes its journal by name: %v", err)
	}
	_, err = admin.New(shopAdmin).CreateJournal(ctx, "bank/forged")
	mustBeDenied(t, "a shop admin creates in bank", err)
	mustBeDenied(t, "a shop admin deletes in bank", admin.New(shopAdmin).DeleteJournal(ctx, "bank/vault"))
	_, err = admin.New(shopAdmin).CreateTenant(ctx, "mine")
	mustBeDenied(t, "a shop admin creates a tenant", err)
	mustBeDenied(t, "a shop admin deletes a tenant", admin.New(shopAdmin).DeleteTenant(ctx, "bank"))
	mustBeDenied(t, "a shop admin drains a machine", admin.New(shopAdmin).DrainMachine(ctx, admin.NodeID(c.Machine(0).Record().NodeID)))
	if _, err := shopAdmin.Resolve(ctx, "bank/vault"); !errors.Is(err, client.ErrUnknownJournal) {
		t.Errorf("a shop admin resolves bank/vault: %v, want ErrUnknownJournal (it sees its tenant only)", err)
	}
	js, err := admin.New(shopAdmin).Journals(ctx, "")
	if err != nil || len(js) != 1 || js[0].Tenant != "shop" {
		t.Errorf("a shop admin lists %+v (%v), want shop/orders only", js, err)
	}

	reader := tokenClient(t, ctx, c, security.Scope{Tenant: shop, Ops: security.OpRead})
	_, err = admin.New(reader).CreateJournal(ctx, "shop/more")
	mustBeDenied(t, "a read-only token creates", err)
	mustBeDenied(t, "a read-only token deletes", admin.New(reader).DeleteJournal(ctx, "shop/orders"))

	// Nothing changed in bank.
	js, err = admin.New(root).Journals(ctx, "bank")
	if err != nil || len(js) != 1 || js[0].ID != vault.ID {
		t.Fatalf("bank holds %+v (%v), want the vault alone", js, err)
	}
	if _, ok := tenantNamed(t, ctx, root, "mine"); ok {
		t.Fatal("a tenant admin made a tenant")
	}
	_ = bank
}

func tenantNamed(t *testing.T, ctx context.Context, cl *client.Client, name string) (admin.TenantInfo, bool) {
	t.Helper()
	reg, err := admin.New(cl).Registry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range reg.Tenants {
		if tn.Name == name {
			return tn, true
		}
	}
	return admin.TenantInfo{}, false
}

// Only the control plane seals a journal, and only one it is deleting: a
// token with every right over a journal cannot install the seal (which
// would freeze the journal for good), nor can a founder's certificate on
// a live journal. Once the journal is deleted its writer is told so, and
// no claim takes it back.
func TestOnlyTheControlPlaneSeals(t *testing.T) {
	c, root := startControlCell(t, 3, true)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := admin.New(root).CreateJournal(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	w := root.Journal(info.ID).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("before")); err != nil {
		t.Fatal(err)
	}
	seal := journal.SetLeaderRequest{Journal: info.ID, New: journal.Sealed, Old: w.Fence()}
	_, err = root.Journal(info.ID).SetLeader(ctx, seal)
	mustBeDenied(t, "an admin token seals a live journal", err)
	founder := certClient(t, ctx, c, c.Machine(0).Record().NodeID)
	_, err = founder.Journal(info.ID).SetLeader(ctx, seal)
	mustBeDenied(t, "a founder's certificate seals a live journal", err)
	if _, err := w.Append(ctx, []byte("still mine")); err != nil {
		t.Fatalf("the writer lost its journal to a refused seal: %v", err)
	}

	if err := admin.New(root).DeleteJournal(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, []byte("after")); !errors.Is(err, client.ErrJournalDeleted) {
		t.Errorf("an append after the deletion: %v, want ErrJournalDeleted", err)
	}
	again := root.Journal(info.ID).NewWriter()
	defer again.Close()
	if err := again.Claim(ctx); !errors.Is(err, client.ErrJournalDeleted) {
		t.Errorf("a claim after the deletion: %v, want ErrJournalDeleted", err)
	}
}
