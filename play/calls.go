package play

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// The calls a move makes on the cell's behalf: the client's writes and
// truncations through the leader, the operator's reconfiguration,
// retirement and matchmaker handover, and a proxy leader's crash.

// write proposes the client's next record at node n, claiming the writer
// fence first if the client has not yet.
func (g *game) write(n *gnode, text string) error {
	if text == "" {
		return illegal("write what? (write N TEXT)")
	}
	if g.facts["claimed"] == 0 {
		if err := g.propose(n, journal.SetLeader(writerFence, journal.LeaderUUID{}), "claim the journal"); err != nil {
			return err
		}
		g.fact("claimed")
	}
	g.written++
	if g.facts["reconfigured"] > 0 {
		g.fact("wrote-after-reconfigure")
	}
	e := journal.Entry{Leader: writerFence, Seq: journal.Seq(g.written), Records: [][]byte{[]byte(text)}}
	return g.propose(n, journal.Write(e), fmt.Sprintf("write %q at position %d", text, g.written))
}

func (g *game) propose(n *gnode, c journal.Command, what string) error {
	if !n.up() {
		return illegal("node %d is down", n.id)
	}
	if !n.node.IsLeader() {
		return illegal("node %d does not lead: only the leader proposes", n.id)
	}
	var r paxos.ProposeResult
	if c.Kind == journal.KindWrite {
		r = n.node.Propose(c.Entry)
	} else {
		r = n.node.ProposeControl(c)
	}
	if r.Status != paxos.Proposed {
		return illegal("node %d refuses to propose: %v", n.id, r.Status)
	}
	g.narrate("node %d proposes %s at slot %d", n.id, what, r.Slot)
	if c.Kind == journal.KindTruncate {
		g.fact("truncate-proposed")
		for _, d := range g.nodes {
			if !d.up() {
				g.fact(fmt.Sprintf("truncated-while-%d-down", d.id))
			}
		}
	}
	g.drain(n)
	return nil
}

func (g *game) reconfigure(n *gnode, f []string) error {
	if len(f) < 3 {
		return illegal("reconfigure N A,B,C")
	}
	sys, err := parseMembers(f[2])
	if err != nil {
		return illegal("%v", err)
	}
	for _, id := range sys.Members() {
		if g.node(id) == nil {
			return illegal("there is no node %d", id)
		}
	}
	if !n.up() || !n.node.IsLeader() {
		return illegal("node %d does not lead", n.id)
	}
	if err := n.node.Reconfigure(sys); err != nil {
		return illegal("node %d refuses: %v", n.id, err)
	}
	g.fact("reconfigured")
	g.facts["written-at-reconfigure"] = g.written
	g.narrate("node %d moves the journal onto %s", n.id, f[2])
	g.drain(n)
	return nil
}

// retire removes node n for good, on the evidence of the leader's garbage
// collection: n may go once no configuration that may still decide names
// it, which its own MayRetire judges against the leader's watermark.
func (g *game) retire(n *gnode) error {
	l := g.leader()
	if l == nil {
		return illegal("no node leads: retirement needs the leader's watermark")
	}
	w, _, ok := l.node.Collected()
	if !ok {
		return illegal("leader %d has collected no configuration yet", l.id)
	}
	if !n.up() {
		return illegal("node %d is down: it must judge its own retirement", n.id)
	}
	if r := n.node.MayRetire(w); r != paxos.RetireOK {
		return illegal("node %d may not retire at watermark %s: %s", n.id, ballotText(w), retireWhy[r])
	}
	n.node, n.retired = nil, true
	g.fact("retired")
	g.narrate("node %d retires: the watermark %s is above every configuration that names it", n.id, ballotText(w))
	return nil
}

// parseMembers reads an acceptor set, "1,2,4", as a majority system.
func parseMembers(list string) (quorum.System, error) {
	var ids []quorum.ID
	for _, s := range strings.Split(list, ",") {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > machinesMax {
			return quorum.System{}, fmt.Errorf("%q is not a node number", s)
		}
		ids = append(ids, quorum.ID(v))
	}
	return quorum.NewMajority(ids)
}

// proxyMove crashes or restarts a proxy leader. A proxy keeps nothing on
// disk: it restarts empty, and the rounds it held are the leader's to take
// back.
func (g *game) proxyMove(x *gproxy, verb string) error {
	switch {
	case verb == "crash" && x.proxy != nil:
		x.proxy = nil
		g.fact("proxy-crashed")
		g.narrate("proxy %s crashed with %s", name(x.id), "its open rounds")
	case verb == "restart" && x.proxy == nil:
		x.proxy = paxos.NewProxy(x.id, paxos.ProxyOptions{BeatTicks: g.opts.HeartbeatTicks})
		g.narrate("proxy %s starts empty", name(x.id))
	default:
		return illegal("proxy %s is already %s", name(x.id), map[string]string{"crash": "down", "restart": "up"}[verb])
	}
	return nil
}

// handover starts the operator's handover of the matchmaker set in force
// to the matchmakers named, driven from node 1's machine.
func (g *game) handover(f []string) error {
	if len(g.mms) == 0 {
		return illegal("this cell has no matchmakers")
	}
	if g.rec != nil && g.rec.Step() != matchmaker.RDone && g.rec.Step() != matchmaker.RAbandoned {
		return illegal("a handover is under way (%s)", g.rec.Step())
	}
	if len(f) < 2 {
		return illegal("handover mA,mB,mC")
	}
	var members []paxos.NodeID
	for _, s := range strings.Split(f[1], ",") {
		v, err := strconv.Atoi(strings.TrimPrefix(s, "m"))
		if err != nil || !strings.HasPrefix(s, "m") || g.matchmaker(paxos.NodeID(100+v)) == nil {
			return illegal("%q is not a matchmaker", s)
		}
		members = append(members, paxos.NodeID(100+v))
	}
	from := g.mms[0].mm.Generation().Newest()
	for _, x := range g.mms {
		if s := x.mm.Generation().Newest(); from.Generation < s.Generation {
			from = s
		}
	}
	next := paxos.MatchmakerSet{Generation: from.Generation + 1, Members: members}
	if err := next.Validate(); err != nil {
		return illegal("%v", err)
	}
	g.rec = matchmaker.NewReconfigurer(recHost, from, members, matchmaker.ReconfigurerOptions{
		ResendTicks: g.opts.HeartbeatTicks, PhaseBudget: campaignTicksMax})
	g.fact("handover")
	g.narrate("the operator hands generation %d (%s) over to %s", from.Generation, nameList(from.Members), nameList(members))
	g.pumpHandover()
	return nil
}

// retireWhy says each refusal of MayRetire in the game's words.
var retireWhy = map[paxos.RetireRefusal]string{
	paxos.RetirePlain:        "a cell without matchmakers never retires a member",
	paxos.RetireLeader:       "it leads",
	paxos.RetireStale:        "it does not know the configuration in force yet (deliver and tick)",
	paxos.RetireMember:       "it is a member of the configuration in force",
	paxos.RetireNotCollected: "the watermark is not above every ballot whose configuration names it: a candidate could still need its promise",
}

// plain is an error without the package prefixes the core and the stores
// put on it ("paros/paxos: "), for the page.
func plain(err error) string {
	s := err.Error()
	for {
		i := strings.Index(s, "paros/")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], ": ")
		if j < 0 {
			return s
		}
		s = s[:i] + s[i+j+2:]
	}
}
