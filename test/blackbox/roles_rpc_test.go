package blackbox

// These tests replay, against real secure `paros serve` processes, the
// hostile-input probe's attacks on the operator's and the cell's calls,
// each by a credential that is genuine but belongs to a holder whose role
// never makes that call; and then check the cell is unchanged and healthy.
//
//   - TestCellCallsNeedTheRoleThatSendsThem: a cell of three nodes, a
//     replica and a proxy (as `paros dev --replicas 1 --proxies 1`). A
//     machine certificate of the CA never admitted to the cell calls
//     SetProxies listing itself, SetReplicas with an empty list and
//     JoinCell with the cell's plan, on every machine; the replica's
//     certificate calls SetReplicas with an empty list on every node. Each
//     is refused PermissionDenied; afterwards every machine lists the same
//     machines as before, an append and a read work, and the replica still
//     serves reads.
//   - TestFormationRoundsCannotBeExhausted: three idle machines. A machine
//     certificate of the CA sends a member PrepareCell at round 2^62 and at
//     2^40 above its promise, naming no founder but itself and naming
//     itself among the founders: refused (PermissionDenied, round_too_far).
//     Then it pushes one member's promise up by the most the bound allows
//     (2^20); `parosctl cell init` still forms the cell.
//   - TestOperatorCallsNameOnlyMachinesOfTheCell: with an admin token,
//     Reconfigure to member [1] (the probe's), Admit of a made-up node id at
//     an idle machine's address, Handoff to a made-up node, and `parosctl
//     journal reconfigure` naming a made-up member are refused unknown_machine
//     (exit 3); the journal keeps its leader and its founding members, no
//     machine admitted anything, and appends go on.
//   - TestInspectShowsTheCellOnlyToWhoMaySeeIt: Inspect with a token of
//     another tenant (and of a journal) lists no machine; with the admin
//     token it lists the cell's three.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// outsider issues a machine certificate of the cell's CA that no machine
// serves and no cell admitted (`paros cert node`) and loads it.
func (c *cell) outsider(name string) *security.Node {
	c.t.Helper()
	dir := filepath.Join(filepath.Dir(c.caDir), name)
	c.paros("cert", "node", "--ca", c.caDir, "--out", dir, "--host", "127.0.0.1")
	n, err := security.LoadNode(dir)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// certConn dials machine to presenting n's certificate (mutual TLS,
// requiring to's).
func (c *cell) certConn(to *proc, n *security.Node) *grpc.ClientConn {
	c.t.Helper()
	conn, err := grpc.NewClient(to.addr, grpc.WithTransportCredentials(credentials.NewTLS(n.PeerConfig(c.node(to).NodeID))))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

// withToken returns ctx carrying tok as the bearer token.
func withToken(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// inspectNode asks machine p for its node facts with token tok.
func (c *cell) inspectNode(ctx context.Context, p *proc, tok string) *pb.InspectReply {
	c.t.Helper()
	r, err := pb.NewAdminClient(strangerConn(c.t, c, p)).Inspect(withToken(ctx, tok), &pb.InspectRequest{NodeOnly: true})
	if err != nil {
		c.t.Fatalf("inspect %s: %v", p.addr, err)
	}
	return r
}

// machinesOf is an Inspect answer's machines, one line each, sorted.
func machinesOf(r *pb.InspectReply) []string {
	var out []string
	for _, m := range r.GetMachines() {
		out = append(out, fmt.Sprintf("%016x %s %s", m.GetNodeId(), m.GetAddr(), m.GetRole()))
	}
	slices.Sort(out)
	return out
}

// wantRefused checks a raw call was refused PermissionDenied naming method.
func wantRefused(t *testing.T, what string, err error, method string) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(status.Convert(err).Message(), method) {
		t.Errorf("%s: %v; want PermissionDenied naming %s", what, err, method)
	}
}

func TestCellCallsNeedTheRoleThatSendsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of five processes")
	}
	// Arrange: three nodes, a replica and a proxy, formed; a claimed Writer
	// with one record; every machine's list of the cell.
	c, nodes, replica, proxy := newCellWithReplicaAndProxy(t)
	id := mustID(t, c.initArgs("--members", joinAddrs(nodes), "--replicas", replica.public(), "--proxies", proxy.public()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := c.dial(ctx, nodes).Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := w.Append(ctx, []byte("before")); err != nil {
		t.Fatalf("append: %v", err)
	}
	before := map[*proc][]string{}
	for _, p := range c.procs {
		before[p] = machinesOf(c.inspectNode(ctx, p, c.token))
	}
	ident, err := pb.NewMachineClient(strangerConn(t, c, nodes[0])).Identify(withToken(ctx, c.token), &pb.IdentifyRequest{Plan: true})
	if err != nil {
		t.Fatal(err)
	}
	plan := ident.GetPlan()
	cellID := plan.GetCellId()
	stranger := c.outsider("stranger")
	replicaCert := c.node(replica)

	// Act: the stranger on every machine; the replica's certificate on
	// every node.
	for _, p := range c.procs {
		m := pb.NewMachineClient(c.certConn(p, stranger))
		_, errProxies := m.SetProxies(ctx, &pb.SetProxiesRequest{CellId: cellID,
			Proxies: []*pb.Member{{NodeId: stranger.NodeID, Addr: "127.0.0.1:1"}}})
		_, errReplicas := m.SetReplicas(ctx, &pb.SetReplicasRequest{CellId: cellID})
		_, errJoin := m.JoinCell(ctx, &pb.JoinCellRequest{Plan: plan})
		wantRefused(t, p.addr+": the stranger's SetProxies listing itself", errProxies, pb.Machine_SetProxies_FullMethodName)
		wantRefused(t, p.addr+": the stranger's SetReplicas", errReplicas, pb.Machine_SetReplicas_FullMethodName)
		wantRefused(t, p.addr+": the stranger's JoinCell", errJoin, pb.Machine_JoinCell_FullMethodName)
	}
	for _, p := range nodes {
		_, err := pb.NewMachineClient(c.certConn(p, replicaCert)).SetReplicas(ctx, &pb.SetReplicasRequest{CellId: cellID})
		wantRefused(t, p.addr+": the replica's SetReplicas emptying the list", err, pb.Machine_SetReplicas_FullMethodName)
	}

	// Check: every machine lists the cell as before; an append and a read
	// work; the replica alone serves a read of the latest append.
	for _, p := range c.procs {
		if got := machinesOf(c.inspectNode(ctx, p, c.token)); !slices.Equal(got, before[p]) {
			t.Errorf("%s lists %v after the attacks, %v before", p.addr, got, before[p])
		}
	}
	seq, err := w.Append(ctx, []byte("after"))
	if err != nil {
		t.Fatalf("append after the attacks: %v", err)
	}
	if got := readBack(t, ctx, c, nodes[0], id, seq+1); len(got) != 2 || string(got[1]) != "after" {
		t.Fatalf("read back %q", got)
	}
	alone := c.dial(ctx, []*proc{replica}).Journal(id)
	for {
		rctx, rcancel := context.WithTimeout(ctx, replicaReadTimeout)
		rr, err := alone.Read(rctx, journal.ReadRequest{FromSeq: seq, Limit: 1})
		rcancel()
		if err == nil && rr.Served && len(rr.Records) == 1 && string(rr.Records[0]) == "after" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the replica serves no read of the latest append after the attacks: %+v, %v\n%s", rr, err, replica.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkRunning(t, c)
}

// joinAddrs is the public addresses of ps, comma-separated.
func joinAddrs(ps []*proc) string {
	var a []string
	for _, p := range ps {
		a = append(a, p.public())
	}
	return strings.Join(a, ",")
}

func TestFormationRoundsCannotBeExhausted(t *testing.T) {
	// Arrange: three idle machines, a machine certificate of the CA.
	c := newCell(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stranger := c.outsider("stranger")
	target := c.procs[1]
	targetID := c.node(target).NodeID
	m := pb.NewMachineClient(c.certConn(target, stranger))
	prepare := func(round uint64, named []uint64) (*pb.PrepareCellReply, error) {
		for {
			r, err := m.PrepareCell(ctx, &pb.PrepareCellRequest{Ballot: &pb.Ballot{Round: round, Node: stranger.NodeID}, Members: named})
			if status.Code(err) != codes.Unavailable || ctx.Err() != nil { // the machine may still bind its port
				return r, err
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	self := []uint64{stranger.NodeID, targetID}
	const lead = 1 << 20 // celldecree.RoundLeadMax

	// Act: round 2^62 (the probe's) and 2^40 above the promise, naming no
	// founder but the target, then naming the stranger a founder; then a
	// push by the most the bound allows; then parosctl cell init.
	_, maxUnnamed := prepare(paxos.BallotRoundMax, []uint64{targetID})
	maxNamed, errMaxNamed := prepare(paxos.BallotRoundMax, self)
	_, hugeUnnamed := prepare(1<<40, []uint64{targetID})
	hugeNamed, errHugeNamed := prepare(1<<40, self)
	pushed, errPushed := prepare(lead, self)
	ref := c.initCell()

	// Check.
	wantRefused(t, "round 2^62 from no founder", maxUnnamed, pb.Machine_PrepareCell_FullMethodName)
	wantRefused(t, "round 2^40 from no founder", hugeUnnamed, pb.Machine_PrepareCell_FullMethodName)
	for name, r := range map[string]*pb.PrepareCellReply{"round 2^62": maxNamed, "round 2^40": hugeNamed} {
		if r.GetPromised() || r.GetRefusal() != "round_too_far" {
			t.Errorf("%s from a founder it names itself: %v; want round_too_far", name, r)
		}
	}
	if errMaxNamed != nil || errHugeNamed != nil || errPushed != nil || !pushed.GetPromised() {
		t.Errorf("errors %v, %v; the push by 2^20: %v, %v", errMaxNamed, errHugeNamed, pushed, errPushed)
	}
	if _, err := journal.ParseID(ref); err != nil {
		t.Fatalf("init printed journal %q: %v", ref, err)
	}
	if out, code := c.ctl("write", ref, "formed"); code != 0 {
		t.Fatalf("write after init: exit %d: %s", code, out)
	}
	checkRunning(t, c)
}

func TestOperatorCallsNameOnlyMachinesOfTheCell(t *testing.T) {
	// Arrange: a formed cell, a claimed Writer with one record, the
	// journal's leader, an idle machine never admitted.
	c := newCell(t)
	ref := c.initCell()
	id := mustID(t, ref)
	jpb := wire.JournalIDToPB(id)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := c.dial(ctx, c.procs)
	w := admin.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := w.Append(ctx, []byte("before")); err != nil {
		t.Fatalf("append: %v", err)
	}
	li := waitRole(t, ctx, admin, id, "leader")
	leader := c.procs[li]
	leaderBefore := inspect(ctx, admin, id)[li]
	idle := c.spare("idle")
	const madeUp = 0x0000000000001234
	opCtx := withToken(ctx, c.token)
	adm := pb.NewAdminClient(strangerConn(t, c, leader))
	mach := pb.NewMachineClient(strangerConn(t, c, leader))
	var keep []string
	for _, p := range c.procs {
		keep = append(keep, fmt.Sprintf("%016x", c.node(p).NodeID))
	}

	// Act.
	one, err1 := adm.Reconfigure(opCtx, &pb.ReconfigureRequest{Journal: jpb, Members: []uint64{1}})
	var admitted *pb.AdmitReply
	var err2 error
	for { // the idle machine may still bind its port
		admitted, err2 = mach.Admit(opCtx, &pb.AdmitRequest{CellId: leaderBefore.CellID, Member: &pb.Member{NodeId: madeUp, Addr: idle.public()}})
		if err2 != nil || !strings.HasPrefix(admitted.GetRefusal(), "machine_unreachable") || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	handoff, err3 := adm.Handoff(opCtx, &pb.HandoffRequest{Journal: jpb, To: madeUp})
	out, code := c.ctl("journal", "reconfigure", ref, "--members", strings.Join(append(keep[:2:2], fmt.Sprintf("%016x", madeUp)), ","))

	// Check: every refusal names the unknown machine; nothing changed.
	if err := err1; err != nil || one.GetAccepted() || !strings.HasPrefix(one.GetRefusal(), "unknown_machine") {
		t.Errorf("Reconfigure to [1]: %v, %v; want unknown_machine", one, err)
	}
	if err2 != nil || admitted.GetAdmitted() || !strings.HasPrefix(admitted.GetRefusal(), "unknown_machine") {
		t.Errorf("Admit of a made-up id: %v, %v; want unknown_machine", admitted, err2)
	}
	if err3 != nil || handoff.GetHandedOff() || !strings.HasPrefix(handoff.GetRefusal(), "unknown_machine") {
		t.Errorf("Handoff to a made-up node: %v, %v; want unknown_machine", handoff, err3)
	}
	if code != 3 || !strings.Contains(out, "unknown machine") {
		t.Errorf("parosctl journal reconfigure naming a made-up member: exit %d: %s; want 3, unknown machine", code, out)
	}
	time.Sleep(3 * time.Second) // election timeouts and more: a leaderless journal would show
	after := inspect(ctx, admin, id)
	if st := after[li]; st.Err != nil || st.Role != "leader" || !slices.Equal(st.Members, leaderBefore.Members) {
		t.Errorf("the leader after the refusals: %+v; want it leading members %x", st, leaderBefore.Members)
	}
	for i, st := range after {
		for _, m := range st.Machines {
			if m.NodeID == madeUp || m.NodeID == 1 {
				t.Errorf("machine %d lists machine %016x", i+1, m.NodeID)
			}
		}
	}
	if _, err := w.Append(ctx, []byte("after")); err != nil {
		t.Fatalf("append after the refusals: %v", err)
	}
	checkRunning(t, c)
}

func TestInspectShowsTheCellOnlyToWhoMaySeeIt(t *testing.T) {
	// Arrange: a formed cell; a read-write token of another tenant, a read
	// token of the journal.
	c := newCell(t)
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	other := c.paros("cert", "token", "--ca", c.caDir, "--subject", "other-tenant", "--tenant",
		fmt.Sprintf("%016x", id.Tenant^1), "--ops", "read,write", "--ttl", "1h")
	reader := c.paros("cert", "token", "--ca", c.caDir, "--subject", "reader", "--journal", ref, "--ops", "read", "--ttl", "1h")

	// Act.
	var asOther, asReader, asAdmin [][]string
	for _, p := range c.procs {
		asOther = append(asOther, machinesOf(c.inspectNode(ctx, p, other)))
		asReader = append(asReader, machinesOf(c.inspectNode(ctx, p, reader)))
		asAdmin = append(asAdmin, machinesOf(c.inspectNode(ctx, p, c.token)))
	}
	conn, err := client.Dial(ctx, []string{c.procs[0].public()}, client.WithCAFile(c.caFile), client.WithToken(other))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lib := inspect(ctx, conn, journal.ID{})

	// Check.
	for i := range c.procs {
		if len(asOther[i]) != 0 || len(asReader[i]) != 0 {
			t.Errorf("machine %d shows another tenant's token %v and a journal's %v; want no machine", i+1, asOther[i], asReader[i])
		}
		if len(asAdmin[i]) != 3 {
			t.Errorf("machine %d shows the admin %v; want the cell's three machines", i+1, asAdmin[i])
		}
	}
	if len(lib) != 1 || lib[0].Err != nil || len(lib[0].Machines) != 0 {
		t.Errorf("client.Inspect with another tenant's token: %+v; want the machine's own facts, no machine of the cell", lib)
	}
}
