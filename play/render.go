package play

import (
	"fmt"
	"slices"
	"strings"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
)

// snapshot is what a move may change at a node, for the narration.
type snapshot struct {
	leader    bool
	ballot    paxos.Ballot
	promised  paxos.Ballot
	chosen    paxos.Slot
	floor     paxos.Slot
	mmsGen    uint64
	collected paxos.Ballot
	takenBack uint64
}

func snapshotOf(n *gnode) snapshot {
	if !n.up() {
		return snapshot{}
	}
	w, _, _ := n.node.Collected()
	return snapshot{leader: n.node.IsLeader(), ballot: n.node.LeaderBallot(), promised: n.node.Promised(),
		chosen: n.node.ChosenIndex(), floor: n.node.Floor(), mmsGen: n.node.MatchmakerSet().Generation,
		collected: w, takenBack: n.node.Counters().ProxyTakenBack}
}

// narrateChange says what a step did to node n, by comparing what the
// core reports before and after it.
func (g *game) narrateChange(n *gnode, before snapshot) {
	if !n.up() {
		return
	}
	after := snapshotOf(n)
	if after.promised != before.promised {
		g.narrate("node %d promises %s", n.id, ballotText(after.promised))
	}
	if after.leader && !before.leader {
		g.narrate("node %d leads at ballot %s", n.id, ballotText(after.ballot))
		g.fact(fmt.Sprintf("led:%d", n.id))
	}
	if !after.leader && before.leader {
		g.narrate("node %d no longer leads", n.id)
	}
	if after.chosen > before.chosen {
		g.narrate("node %d knows slots through %d chosen", n.id, after.chosen)
	}
	if after.floor > before.floor {
		g.narrate("node %d's floor moves to %d", n.id, after.floor)
	}
	if after.mmsGen > before.mmsGen && before.mmsGen > 0 {
		g.narrate("node %d follows the chain to matchmaker generation %d", n.id, after.mmsGen)
	}
	if after.collected != before.collected && !after.collected.IsZero() {
		g.narrate("node %d's garbage collection is effective: the matchmakers forget every configuration below %s", n.id, ballotText(after.collected))
	}
	if after.takenBack > before.takenBack {
		g.narrate("node %d takes back %d round(s) a proxy never answered, and runs them itself", n.id, after.takenBack-before.takenBack)
	}
}

// observeDelivery records the facts a goal asks about that a delivery
// shows: an Accept to an acceptor outside the slot's grid column.
func (g *game) observeDelivery(m paxos.Message) {
	if m.Type == paxos.MsgAccepted {
		for _, v := range m.Votes {
			k := votedKey(v.Slot, m.Ballot)
			if g.votes[k] == nil {
				g.votes[k] = map[paxos.NodeID]bool{}
			}
			g.votes[k][m.From] = true
		}
	}
	if m.Type == paxos.MsgCommit && g.proxyOf(m.From) != nil {
		g.fact("proxy-commit")
	}
	if m.Type != paxos.MsgAccept || len(m.Entries) == 0 || g.sys.Kind() != quorum.KindGrid {
		return
	}
	col := g.sys.ColumnOf(uint64(m.Entries[0].Slot))
	if idx := slices.Index(g.sys.Members(), m.To); idx >= 0 && g.sys.MemberColumn(idx) != col {
		g.fact("stray-accept")
	}
}

func votedKey(s paxos.Slot, b paxos.Ballot) string { return fmt.Sprintf("%d@%s", s, ballotText(b)) }

// voters counts the acceptors that voted for slot s at ballot b: those
// whose Accepted was delivered, and the ballot's owner, whose own vote
// needs no message.
func (g *game) voters(s paxos.Slot, b paxos.Ballot) int {
	n := len(g.votes[votedKey(s, b)])
	if !g.votes[votedKey(s, b)][b.Node] {
		n++
	}
	return n
}

// isStrayVote: m is an Accepted from an acceptor outside the grid column
// of the slot it votes for.
func (g *game) isStrayVote(m paxos.Message) bool {
	if m.Type != paxos.MsgAccepted || len(m.Votes) == 0 || g.sys.Kind() != quorum.KindGrid {
		return false
	}
	idx, ok := g.sys.IndexOf(m.From)
	return ok && g.sys.MemberColumn(idx) != g.sys.ColumnOf(uint64(m.Votes[0].Slot))
}

// chosenAtLeader is the leader's chosen index (0 with no leader).
func (g *game) chosenAtLeader() paxos.Slot {
	if l := g.leader(); l != nil {
		return l.node.ChosenIndex()
	}
	return 0
}

// route is who sent a flight and to whom.
func (f flight) route() (from, to paxos.NodeID) {
	if f.hv != nil {
		return f.hv.From, f.hv.To
	}
	return f.msg.From, f.msg.To
}

// kind is a flight's type as the page labels it: a handover's messages
// say so, since their decree reuses Paxos's names.
func (f flight) kind() string {
	if f.hv != nil {
		return "handover " + f.hv.Kind.String()
	}
	return kindOf(f.msg)
}

// describe is one line about a flight.
func (f flight) describe() string {
	if f.hv == nil {
		return describe(f.msg)
	}
	h := f.hv
	s := fmt.Sprintf("%s %s→%s g%d", f.kind(), name(h.From), name(h.To), h.Generation)
	if !h.Ballot.IsZero() {
		s += " b=" + ballotText(h.Ballot)
	}
	if !h.Set.IsZero() {
		s += fmt.Sprintf(" set g%d %s", h.Set.Generation, nameList(h.Set.Members))
	}
	if !h.Successor.IsZero() {
		s += fmt.Sprintf(" successor g%d %s", h.Successor.Generation, nameList(h.Successor.Members))
	}
	return s
}

// nameList is a list of machines as the page writes it.
func nameList(ids []paxos.NodeID) string {
	var out []string
	for _, id := range ids {
		out = append(out, name(id))
	}
	return strings.Join(out, ",")
}

// kindOf is a message's type, as the page labels it.
func kindOf(m paxos.Message) string { return m.Type.String() }

// describe is one line about a message: its type, route and what it
// carries, in the numbers the level text uses.
func describe(m paxos.Message) string {
	s := fmt.Sprintf("%s %s→%s", m.Type, name(m.From), name(m.To))
	if !m.Ballot.IsZero() {
		s += " b=" + ballotText(m.Ballot)
	}
	switch m.Type {
	case paxos.MsgPrepare:
		s += fmt.Sprintf(" from slot %d", m.Slot)
	case paxos.MsgPromise:
		s += fmt.Sprintf(" %d accepted", len(m.Entries))
		if len(m.Faulty) > 0 {
			var slots []string
			for _, f := range m.Faulty {
				slots = append(slots, fmt.Sprintf("%d@%s", f.Slot, ballotText(f.Ballot)))
			}
			s += " damaged " + strings.Join(slots, ",")
		}
	case paxos.MsgAccept:
		for _, e := range m.Entries {
			s += fmt.Sprintf(" [%d:%s]", e.Slot, commandText(e.Command))
		}
		if m.Commit > 0 {
			s += fmt.Sprintf(" commit≤%d", m.Commit)
		}
	case paxos.MsgAccepted:
		var slots []string
		for _, v := range m.Votes {
			slots = append(slots, fmt.Sprint(v.Slot))
		}
		s += " slots " + strings.Join(slots, ",")
	case paxos.MsgNack:
		s += fmt.Sprintf(" refused %s, floor %d", ballotText(m.Refused), m.Slot)
	case paxos.MsgCommit, paxos.MsgHeartbeat, paxos.MsgHeartbeatAck:
		s += fmt.Sprintf(" commit≤%d", m.Commit)
	case paxos.MsgTrimmedTo:
		s += fmt.Sprintf(" floor %d", m.Slot)
	case paxos.MsgPreRead, paxos.MsgPreReadAck:
		s += fmt.Sprintf(" read #%d", m.Ctx)
		if m.Type == paxos.MsgPreReadAck {
			s += fmt.Sprintf(" voted≤%d", m.Watermark)
		}
	case paxos.MsgScrub, paxos.MsgScrubReply:
		s += fmt.Sprintf(" slots %d..%d (the background scrubber compares the disks' records)", m.Slot, m.Next)
	case paxos.MsgCatchUpRequest:
		s += fmt.Sprintf(" from slot %d", m.Slot)
	case paxos.MsgCatchUpResponse:
		s += fmt.Sprintf(" %d chosen", len(m.Entries))
	}
	return s
}

// commandText is a slot's value as the log shows it.
func commandText(c journal.Command) string {
	switch c.Kind {
	case journal.KindWrite:
		var recs []string
		for _, r := range c.Entry.Records {
			recs = append(recs, string(r))
		}
		return fmt.Sprintf("write@%d %s", c.Entry.Seq, strings.Join(recs, ","))
	case journal.KindTruncate:
		return fmt.Sprintf("truncate<%d", c.UpTo)
	case journal.KindSetLeader:
		return "claim"
	case journal.KindNoop:
		return "noop"
	}
	return c.Kind.String()
}

// view renders the position.
func (g *game) view() View {
	st, verdict := g.level.Check(g)
	v := View{
		Level:    LevelView{ID: g.level.ID, Act: g.level.Act, Title: g.level.Title, Intro: g.level.Intro, Goal: g.level.Goal},
		Status:   st,
		Verdict:  verdict,
		Hint:     g.level.hint(g),
		Timeline: slices.Clone(g.timeline),
		Log:      slices.Clone(g.log),
	}
	if v.Timeline == nil {
		v.Timeline = []Event{}
	}
	if v.Log == nil {
		v.Log = []string{}
	}
	for _, n := range g.nodes {
		v.Machines = append(v.Machines, g.machineView(n))
	}
	for _, x := range g.mms {
		mv := MachineView{ID: name(x.id), Kind: "matchmaker", Up: x.mm != nil, Role: "matchmaker", Disk: "ok", Column: -1, Row: -1, Log: []SlotView{}}
		if gen := x.mm.Generation(); len(g.level.Setup.Moves) == 0 || slices.Contains(g.level.Setup.Moves, "handover") {
			mv.Role = gen.Phase().String()
			if !gen.Set.IsZero() {
				mv.Notes = append(mv.Notes, fmt.Sprintf("generation %d: %s", gen.Set.Generation, nameList(gen.Set.Members)))
			}
			if !gen.Successor.IsZero() {
				mv.Notes = append(mv.Notes, fmt.Sprintf("handed over to generation %d", gen.Successor.Generation))
			}
		}
		if reg, ok := x.mm.Registry(playJournal); ok {
			for _, r := range reg.Regs {
				mv.Notes = append(mv.Notes, fmt.Sprintf("%s → %s", ballotText(r.Ballot), memberList(r.Acceptors)))
			}
			if !reg.Watermark.IsZero() {
				mv.Notes = append(mv.Notes, "collected below "+ballotText(reg.Watermark))
			}
		}
		v.Machines = append(v.Machines, mv)
	}
	for _, x := range g.pxs {
		mv := MachineView{ID: name(x.id), Kind: "proxy", Up: x.proxy != nil, Role: "proxy", Disk: "none", Column: -1, Row: -1, Log: []SlotView{}}
		if x.proxy == nil {
			mv.Role = "down"
		} else if open := x.proxy.Open(); open > 0 {
			mv.Notes = append(mv.Notes, fmt.Sprintf("%d round(s) open at %s", open, ballotText(x.proxy.Ballot())))
		}
		v.Machines = append(v.Machines, mv)
	}
	v.InFlight = []MessageView{}
	for _, f := range g.pool {
		from, to := f.route()
		v.InFlight = append(v.InFlight, MessageView{ID: f.id, From: name(from), To: name(to), Kind: f.kind(), Text: f.describe()})
	}
	if g.prompt != nil {
		p := &PromptView{Question: g.prompt.question}
		for _, c := range g.prompt.choices {
			p.Choices = append(p.Choices, MoveView{Move: "answer " + c, Label: c, Group: "answer"})
		}
		v.Prompt = p
		v.Moves = p.Choices
	} else {
		v.Moves = g.legalMoves()
	}
	return v
}

func (g *game) machineView(n *gnode) MachineView {
	mv := MachineView{ID: name(n.id), Kind: "acceptor", Up: n.up(), Disk: "ok", Column: -1, Row: -1, Log: []SlotView{}}
	switch {
	case n.cfg.Replica:
		mv.Kind = "replica"
	case n.cfg.Joiner:
		mv.Kind = "spare"
	}
	if idx, ok := g.sys.IndexOf(n.id); ok && g.sys.Kind() == quorum.KindGrid {
		mv.Column, mv.Row = g.sys.MemberColumn(idx), g.sys.RowOf(idx)
	}
	if n.wiped {
		mv.Disk = "wiped"
	}
	var faulty []paxos.Slot
	for _, f := range n.store.FaultyEntries() {
		faulty = append(faulty, f.Slot)
	}
	if len(faulty) > 0 {
		mv.Disk = fmt.Sprintf("damaged at %v", faulty)
	}
	switch {
	case n.retired:
		mv.Role = "retired"
	case !n.up() && n.refused != "":
		mv.Role = "refused"
		mv.Notes = append(mv.Notes, n.refused)
	case !n.up():
		mv.Role = "down"
	default:
		mv.Role = n.node.Role()
		mv.Promised = ballotText(n.node.Promised())
		mv.Floor, mv.Chosen, mv.Applied = uint64(n.node.Floor()), uint64(n.node.ChosenIndex()), uint64(n.node.Applied())
		for ctx, rs := range n.reads {
			switch {
			case rs.Ctx == 0:
				mv.Notes = append(mv.Notes, fmt.Sprintf("read #%d waits", ctx))
			case rs.OK:
				mv.Notes = append(mv.Notes, fmt.Sprintf("read #%d served through slot %d", ctx, rs.Index))
			}
		}
		slices.Sort(mv.Notes)
	}
	for _, r := range n.store.Records() {
		mv.Log = append(mv.Log, SlotView{Slot: uint64(r.Slot), Ballot: ballotText(r.Ballot), Text: commandText(r.Command),
			Chosen: n.up() && r.Slot <= n.node.ChosenIndex(), Faulty: slices.Contains(faulty, r.Slot)})
	}
	for _, s := range faulty {
		if !slices.ContainsFunc(mv.Log, func(x SlotView) bool { return x.Slot == uint64(s) }) {
			b, _ := n.store.FaultyAt(s)
			mv.Log = append(mv.Log, SlotView{Slot: uint64(s), Ballot: ballotText(b), Text: "damaged", Faulty: true})
		}
	}
	slices.SortFunc(mv.Log, func(a, b SlotView) int { return int(a.Slot) - int(b.Slot) })
	return mv
}

// legalMoves are the buttons: the messages in flight, then each node's
// clock and faults, then the client's calls at the leader.
func (g *game) legalMoves() []MoveView {
	var out []MoveView
	for i, f := range g.pool {
		key := ""
		if i < 9 {
			key = fmt.Sprint(i + 1)
		}
		out = append(out,
			MoveView{Move: fmt.Sprintf("deliver %d", f.id), Label: "deliver " + f.describe(), Group: "message", Key: key},
			MoveView{Move: fmt.Sprintf("drop %d", f.id), Label: fmt.Sprintf("drop %d", f.id), Group: "message"},
			MoveView{Move: fmt.Sprintf("dup %d", f.id), Label: fmt.Sprintf("duplicate %d", f.id), Group: "message"})
	}
	if g.sys.Kind() == quorum.KindGrid {
		for _, f := range g.pool {
			if f.hv != nil || f.msg.Type != paxos.MsgAccept || len(f.msg.Entries) == 0 {
				continue
			}
			cols := map[int]bool{}
			for _, e := range f.msg.Entries {
				cols[g.sys.ColumnOf(uint64(e.Slot))] = true
			}
			for i, id := range g.sys.Members() {
				if !cols[g.sys.MemberColumn(i)] && id != f.msg.To {
					out = append(out, MoveView{Move: fmt.Sprintf("stray %d %d", f.id, id),
						Label: fmt.Sprintf("stray a copy of %d to node %d", f.id, id), Group: "message"})
				}
			}
		}
	}
	if len(g.pool) > 0 {
		out = append(out, MoveView{Move: "run", Label: "deliver everything", Group: "message", Key: "d"})
	}
	allowed := g.level.Setup.Moves
	may := func(verb string) bool { return len(allowed) == 0 || slices.Contains(allowed, verb) }
	for _, n := range g.nodes {
		if n.retired {
			continue
		}
		id := n.id
		if n.up() {
			if !n.cfg.Replica && !n.node.IsLeader() && may("campaign") {
				out = append(out, MoveView{Move: fmt.Sprintf("campaign %d", id), Label: fmt.Sprintf("node %d campaigns", id), Group: "node"})
			}
			if may("tick") {
				out = append(out, MoveView{Move: fmt.Sprintf("tick %d", id), Label: fmt.Sprintf("tick node %d", id), Group: "node"},
					MoveView{Move: fmt.Sprintf("tick %d 5", id), Label: fmt.Sprintf("tick node %d five times", id), Group: "node"})
			}
			if may("crash") {
				out = append(out, MoveView{Move: fmt.Sprintf("crash %d", id), Label: fmt.Sprintf("crash node %d", id), Group: "node"})
			}
			if may("read") && n.node.Role() != "leader" {
				out = append(out, MoveView{Move: fmt.Sprintf("read %d", id), Label: fmt.Sprintf("read at node %d", id), Group: "client"})
			}
		} else {
			out = append(out, MoveView{Move: fmt.Sprintf("restart %d", id), Label: fmt.Sprintf("restart node %d", id), Group: "node"})
			if may("wipe") && !n.wiped {
				out = append(out, MoveView{Move: fmt.Sprintf("wipe %d", id), Label: fmt.Sprintf("wipe node %d's disk", id), Group: "node"})
			}
		}
		if may("rot") && !n.up() {
			// A record rots on a disk at rest: a running node still holds
			// its copy in memory, and reads the damage at its next start.
			for _, r := range n.store.Records() {
				out = append(out, MoveView{Move: fmt.Sprintf("rot %d %d", id, r.Slot), Label: fmt.Sprintf("rot slot %d on node %d", r.Slot, id), Group: "node"})
			}
		}
	}
	for _, x := range g.pxs {
		if x.proxy != nil && may("crash") {
			out = append(out, MoveView{Move: fmt.Sprintf("crash %d", x.id), Label: "crash proxy " + name(x.id), Group: "node"})
		} else if x.proxy == nil {
			out = append(out, MoveView{Move: fmt.Sprintf("restart %d", x.id), Label: "restart proxy " + name(x.id), Group: "node"})
		}
	}
	if sp := g.level.Setup.SpareMatchmakers; sp > 0 && may("handover") && g.facts["handover"] == 0 {
		var names []string
		for i := range sp {
			names = append(names, name(paxos.NodeID(101+g.level.Setup.Matchmakers+i)))
		}
		set := strings.Join(names, ",")
		out = append(out, MoveView{Move: "handover " + set, Label: "hand the matchmaker set over to " + set, Group: "cell"})
	}
	if l := g.leader(); l != nil {
		out = append(out, MoveView{Move: fmt.Sprintf("write %d r%d", l.id, g.written+1), Label: fmt.Sprintf("write r%d through node %d", g.written+1, l.id), Group: "client", Key: "w"})
		if may("truncate") {
			for s := 2; s <= g.written+1; s++ {
				out = append(out, MoveView{Move: fmt.Sprintf("truncate %d %d", l.id, s), Label: fmt.Sprintf("truncate below position %d", s), Group: "client"})
			}
		}
		if may("handoff") {
			for _, n := range g.nodes {
				if n != l && n.up() && !n.cfg.Replica {
					out = append(out, MoveView{Move: fmt.Sprintf("handoff %d %d", l.id, n.id), Label: fmt.Sprintf("hand leadership to node %d", n.id), Group: "cell"})
				}
			}
		}
		for _, r := range g.level.Setup.Reconfigurations {
			out = append(out, MoveView{Move: fmt.Sprintf("reconfigure %d %s", l.id, r), Label: "move onto " + r, Group: "cell"})
		}
		if may("retire") {
			for _, n := range g.nodes {
				if n != l && n.up() && !n.cfg.Replica {
					out = append(out, MoveView{Move: fmt.Sprintf("retire %d", n.id), Label: fmt.Sprintf("retire node %d", n.id), Group: "cell"})
				}
			}
		}
	}
	return out
}

// memberList is an acceptor set as the page writes it: 1,2,3.
func memberList(s quorum.System) string {
	var ids []string
	for _, id := range s.Members() {
		ids = append(ids, name(id))
	}
	return strings.Join(ids, ",")
}
