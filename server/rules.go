package server

import (
	"fmt"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// need is what a rule asks of the caller.
type need uint8

const (
	// needJournalOp: a token whose claims grant the rule's op on the
	// request's journal; for a stream, on the journal of every write it
	// carries (a write out of scope ends the stream).
	needJournalOp need = iota + 1
	// needPeer: a peer machine's certificate of this cell. The Peer stream
	// then checks every sender it is handed against it (Peer.Stream).
	needPeer
	// needInspect: node_only: any authenticated principal; a journal (or
	// none): a token with any scope covering it. A token without admin
	// over everything sees only the journals it covers listed; a peer
	// machine sees them all (Admin.Inspect). The cell's machines are shown
	// only to a peer or a token covering every journal (seesCell).
	needInspect
	// needPeerOrAdmin: a peer machine's certificate, or a token granting
	// OpAdmin over every journal. The handler then admits a peer only
	// where its role needs the call (Machine.JoinCell: the formation's
	// proposer, named in the plan), taking it from CallerOf.
	needPeerOrAdmin
	// needAdmin: a token granting OpAdmin over every journal.
	needAdmin
	// needIdentify: any authenticated principal; asking for the cell plan
	// too (which lists every journal), a peer machine's certificate or a
	// token granting OpAdmin over every journal (Machine.Identify).
	needIdentify
	// needTenantAdmin: a token granting OpAdmin on some scope. The handler
	// then resolves the tenant the request names and admits the call only
	// if the token grants OpAdmin over that whole tenant
	// (Caller.AllowsTenant): a name means nothing before it is resolved.
	needTenantAdmin
	// needAnyone: any authenticated principal; the handler shows each only
	// what its scope covers (Caller.SeesTenant).
	needAnyone
)

// rule is what one RPC needs.
type rule struct {
	method string
	need   need
	op     security.Op // needJournalOp only
}

// rules is who may call what, once for every RPC of every service a
// machine registers (a test checks the table against the service
// descriptors both ways). A method without a rule is refused.
//
//	method                         needs
//	-----------------------------  -------------------------------------------
//	Journal/Read                   token: read on the request's journal;
//	                               or a peer certificate the machine's
//	                               ControlPeer grants it (below)
//	Journal/Write                  token: write on the request's journal;
//	                               or a peer certificate, as Read
//	Journal/Truncate               token: write on the request's journal;
//	                               or a peer certificate, as Read
//	Journal/SetLeader              token: write on the request's journal;
//	                               or a peer certificate, as Read; one
//	                               that installs the seal: only a peer
//	                               certificate ControlPeer grants it
//	Journal/WriteStream            token: write on the journal of every
//	                               write; or a peer certificate, as Read
//	Control/CreateTenant           token: admin over every journal
//	Control/DeleteTenant           token: admin over every journal
//	Control/RegisterMachine        token: admin over every journal
//	Control/DrainMachine           token: admin over every journal
//	Control/CreateJournal          token: admin on some scope; the handler:
//	                               admin over the whole tenant named
//	Control/DeleteJournal          token: admin on some scope; the handler:
//	                               admin over the whole tenant named
//	Control/Registry               anyone authenticated; the handler shows
//	                               the tenants the caller's scope covers
//	Peer/Stream                    peer certificate; every from = its node id
//	Admin/Inspect                  node_only: anyone; else a token covering
//	                               the journal; list filtered to scope; the
//	                               cell's machines only to a peer or a token
//	                               covering every journal
//	Admin/Reconfigure              token: admin over every journal; the
//	                               members: live acceptor machines of the
//	                               cell (CellVetter)
//	Admin/ReconfigureMatchmakers   token: admin over every journal
//	Admin/Retire                   token: admin over every journal
//	Admin/Handoff                  token: admin over every journal; the
//	                               successor: a machine of the cell
//	                               (CellVetter)
//	Machine/Identify               anyone authenticated; with plan: peer
//	                               certificate, or admin over everything
//	Machine/PrepareCell            peer certificate; the handler: a founding
//	                               member named in the request (formed: a
//	                               founder of the cell), the ballot its own
//	                               node, the round at most promised+2^20
//	Machine/FormCell               peer certificate; the handler: a founding
//	                               member named in the plan (formed: a
//	                               founder of the cell), the ballot its own
//	                               node, the round at most promised+2^20
//	Machine/CellInit               token: admin over every journal
//	Machine/Admit                  token: admin over every journal
//	Machine/JoinCell               admin over everything; or a peer
//	                               certificate, the handler: the formation's
//	                               proposer (a founder named in the plan;
//	                               formed: a founder of the cell) joining a
//	                               replica or proxy machine
//	Machine/JoinJournal            token: admin over every journal
//	Machine/SetReplicas            token: admin over every journal
//	Machine/SetProxies             token: admin over every journal
//
// Why the peer journal calls are safe. A machine's certificate grants a
// journal call only where the machine's role needs it (ControlPeer): the
// cell's control-plane journals, read and written by the cell's acceptor
// machines (founders and admitted machines: the candidates of the cell
// coordinator's election, and the coordinator that fences the registry,
// which outlive the founders once these are replaced); and an acceptor
// machine may move the writer fence (SetLeader, which writes no record)
// of a user's journal the registry holds as being deleted, so that no
// writer's append is accepted after the deletion. A
// replica's or proxy's certificate, or one of a machine the cell never
// admitted, writes to no journal, and no certificate reads a user's
// journal or writes a record to it.
//
// Why each Machine rule is safe. Identify tells what a TLS handshake
// already shows (the node id), and the plan (every journal) only to a
// machine or an admin. PrepareCell and FormCell are the decree's two
// phases, sent by its proposer over its own certificate (the operator's
// token reaches only CellInit); a machine of the CA that names no member
// is refused, a ballot under another node cannot be forged, and a round
// cannot jump the promise far enough to exhaust the decree (celldecree.RoundLeadMax).
// JoinCell comes from parosctl (admin) or from
// CellInit's proposer joining the plan's replicas and proxies (peer): a
// peer may join only a replica or proxy machine, into a plan naming the
// peer as a founder (once the machine is in a cell, a founder of it), so a
// certificate outside the cell moves no machine of a formed cell and makes
// no acceptor (which joins only once an admin admitted it). Before a cell
// forms, a certificate of the CA is the only credential an idle machine
// can judge: one naming itself a founder can still draw idle machines into
// a plan of its own, as it could by running the decree itself. Admit, JoinJournal, SetReplicas and
// SetProxies come only from an operator's tool (client.Client, with an
// admin token): no machine role sends them, so no certificate may (one
// listed itself as a proxy, another emptied the replica list). Admin
// calls naming machines are checked against the cell before the host
// sees them (server.CellVetter).
//
// No credential answers Unauthenticated (as does an invalid or expired
// token); a credential that does not grant the call, PermissionDenied,
// decided from the request alone so that the answer never tells whether a
// journal exists.
var rules = []rule{
	{pb.Journal_Read_FullMethodName, needJournalOp, security.OpRead},
	{pb.Journal_Write_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_Truncate_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_SetLeader_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Journal_WriteStream_FullMethodName, needJournalOp, security.OpWrite},
	{pb.Peer_Stream_FullMethodName, needPeer, 0},
	{pb.Admin_Inspect_FullMethodName, needInspect, 0},
	{pb.Admin_Reconfigure_FullMethodName, needAdmin, 0},
	{pb.Admin_ReconfigureMatchmakers_FullMethodName, needAdmin, 0},
	{pb.Admin_Retire_FullMethodName, needAdmin, 0},
	{pb.Admin_Handoff_FullMethodName, needAdmin, 0},
	{pb.Machine_Identify_FullMethodName, needIdentify, 0},
	{pb.Machine_PrepareCell_FullMethodName, needPeer, 0},
	{pb.Machine_FormCell_FullMethodName, needPeer, 0},
	{pb.Machine_CellInit_FullMethodName, needAdmin, 0},
	{pb.Machine_Admit_FullMethodName, needAdmin, 0},
	{pb.Machine_JoinCell_FullMethodName, needPeerOrAdmin, 0},
	{pb.Machine_JoinJournal_FullMethodName, needAdmin, 0},
	{pb.Machine_SetReplicas_FullMethodName, needAdmin, 0},
	{pb.Machine_SetProxies_FullMethodName, needAdmin, 0},
	{pb.Control_CreateTenant_FullMethodName, needAdmin, 0},
	{pb.Control_DeleteTenant_FullMethodName, needAdmin, 0},
	{pb.Control_RegisterMachine_FullMethodName, needAdmin, 0},
	{pb.Control_DrainMachine_FullMethodName, needAdmin, 0},
	{pb.Control_CreateJournal_FullMethodName, needTenantAdmin, 0},
	{pb.Control_DeleteJournal_FullMethodName, needTenantAdmin, 0},
	{pb.Control_Registry_FullMethodName, needAnyone, 0},
}

// ruleOf indexes rules by full method name.
var ruleOf = func() map[string]rule {
	m := make(map[string]rule, len(rules))
	for _, r := range rules {
		if _, dup := m[r.method]; dup {
			panic(fmt.Sprintf("paros/server: two rules for %s", r.method))
		}
		if r.need == needJournalOp && r.op == 0 {
			panic(fmt.Sprintf("paros/server: the rule for %s names no operation", r.method))
		}
		m[r.method] = r
	}
	return m
}()

// allows reports whether p may make a call under r carrying req; req nil
// asks at a stream's opening, before any message (a needJournalOp stream
// then needs a token granting the op somewhere; each message is checked
// as it arrives).
func (r rule) allows(p principal, req any) bool {
	switch r.need {
	case needPeer:
		return p.node != 0
	case needAdmin:
		return p.adminAll()
	case needPeerOrAdmin:
		return p.node != 0 || p.adminAll()
	case needJournalOp:
		if req == nil {
			// A stream's opening: each message is checked as it comes.
			return p.claims != nil && grantsOp(*p.claims, r.op) || p.node != 0 && p.controlPeer != nil
		}
		j, ok := req.(interface{ GetJournal() *pb.JournalId })
		if !ok {
			return false
		}
		id := wire.JournalIDFromPB(j.GetJournal())
		sl, _ := req.(*pb.SetLeaderRequest)
		if seal := sl != nil && wire.UUIDFromPB(sl.GetNewLeader()) == journal.Sealed; seal {
			// Only the control plane seals a journal, and only one it is
			// deleting: a token's write right does not reach it.
			return p.peerMay(r.op, id, true)
		}
		return p.claims != nil && p.claims.Allows(r.op, id) || p.peerMay(r.op, id, false)
	case needTenantAdmin:
		return p.claims != nil && grantsOp(*p.claims, security.OpAdmin)
	case needAnyone:
		return p.authenticated()
	case needIdentify:
		in, ok := req.(*pb.IdentifyRequest)
		return ok && (!in.GetPlan() || p.node != 0 || p.adminAll())
	case needInspect:
		in, ok := req.(*pb.InspectRequest)
		if !ok {
			return false
		}
		return in.GetNodeOnly() || (p.claims != nil && p.claims.AllowsAny(wire.JournalIDFromPB(in.GetJournal())))
	}
	return false
}

func grantsOp(c security.Claims, op security.Op) bool {
	for _, s := range c.Scopes {
		if s.Ops&op == op {
			return true
		}
	}
	return false
}
