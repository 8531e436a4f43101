package play

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// A move is one line of text, so that a position is a list of strings a
// URL can carry. The grammar, one verb per row:
//
//	move                   what the player does
//	---------------------  ---------------------------------------------------
//	deliver M              hand message M to its addressee
//	drop M                 lose message M
//	dup M                  copy message M (the copy gets a new number)
//	stray M N              misroute a copy of Accept M to node N
//	run                    deliver every message until the network falls quiet
//	tick N [K]             one tick (or K) of node N's clock
//	campaign N             tick node N until its election timeout ends
//	crash N                stop node N (its disk keeps what it synced)
//	restart N              start node N from its disk
//	wipe N                 erase node N's disk (node N must be down)
//	rot N S                damage the record of slot S on node N's disk
//	write N TEXT           the client writes one record through node N
//	truncate N SEQ         the client drops every position below SEQ
//	read N                 the client asks node N for a linearizable read
//	handoff N M            leader N hands its leadership to node M
//	reconfigure N A,B,C    leader N moves the journal onto acceptors A,B,C
//	retire N               the operator retires node N, if the leader's
//	                       garbage collection says it may go
//	handover mA,mB,mC      the operator hands the matchmaker set over to
//	                       matchmakers A, B, C (the next generation)
//	answer X               answer the open question with X
//
// An illegal move is refused with an *IllegalMove and changes nothing.

// IllegalMove is a move the world does not allow here.
type IllegalMove struct{ Why string }

func (e *IllegalMove) Error() string { return e.Why }

func illegal(format string, args ...any) error {
	return &IllegalMove{Why: fmt.Sprintf(format, args...)}
}

// play applies one move and, if it was played, records it.
func (g *game) play(mv string) error {
	g.narration = nil
	f := strings.Fields(mv)
	if len(f) == 0 {
		return illegal("an empty move")
	}
	if g.prompt != nil && f[0] != "answer" {
		return illegal("answer the question first: %s", g.prompt.question)
	}
	if err := g.apply(f); err != nil {
		return err
	}
	g.log = append(g.log, mv)
	text := strings.Join(compact(g.narration), "; ")
	if text == "" {
		text = "nothing visible changed"
	}
	g.timeline = append(g.timeline, Event{N: len(g.log), Move: mv, Text: text})
	if g.prompt == nil && g.level.Ask != nil {
		g.prompt = g.level.Ask(g)
	}
	return nil
}

func (g *game) apply(f []string) error {
	switch f[0] {
	case "deliver", "drop", "dup":
		id, err := argInt(f, 1)
		if err != nil {
			return err
		}
		i, ok := g.flightAt(id)
		if !ok {
			return illegal("no message %d is in flight", id)
		}
		fl := g.pool[i]
		switch f[0] {
		case "deliver":
			g.pool = slices.Delete(g.pool, i, i+1)
			g.narrate("%s delivered", fl.describe())
			g.observeDelivery(fl.msg)
			before := g.chosenAtLeader()
			g.deliverFlight(fl)
			if g.isStrayVote(fl.msg) && g.chosenAtLeader() == before {
				g.fact("stray-ignored")
				g.narrate("the leader's tally ignores node %s's vote: it is outside the slot's column", name(fl.msg.From))
			}
		case "drop":
			g.pool = slices.Delete(g.pool, i, i+1)
			g.narrate("%s lost", fl.describe())
		case "dup":
			g.pool = append(g.pool, flight{id: g.next, msg: fl.msg, hv: fl.hv})
			g.next++
			g.narrate("%s copied as message %d", fl.describe(), g.next-1)
		}
		return nil
	case "stray":
		// The network misroutes a copy of an Accept to an acceptor outside
		// the slot's grid column.
		id, err := argInt(f, 1)
		if err != nil {
			return err
		}
		i, ok := g.flightAt(id)
		if !ok || g.pool[i].hv != nil || g.pool[i].msg.Type != paxos.MsgAccept {
			return illegal("message %d is not an Accept in flight", id)
		}
		to, err := g.nodeArg(f, 2)
		if err != nil {
			return err
		}
		m := g.pool[i].msg
		m.To = to.id
		g.send(m)
		g.narrate("a copy of %s strays to node %d as message %d", describe(g.pool[i].msg), to.id, g.next-1)
		return nil
	case "run":
		if len(g.pool) == 0 {
			return illegal("nothing is in flight")
		}
		for n := 0; len(g.pool) > 0; n++ {
			if n == quietMax {
				return illegal("the network did not fall quiet in %d deliveries", quietMax)
			}
			fl := g.pool[0]
			g.pool = g.pool[1:]
			g.observeDelivery(fl.msg)
			g.deliverFlight(fl)
		}
		g.narrate("every message delivered")
		return nil
	case "answer":
		if g.prompt == nil {
			return illegal("no question is open")
		}
		if len(f) < 2 {
			return illegal("answer what?")
		}
		p := g.prompt
		if ok, why := p.judge(g, strings.Join(f[1:], " ")); !ok {
			return &WrongAnswer{Why: why}
		}
		g.prompt = nil
		g.fact("answered:" + p.kind)
		g.narrate("right: %s", p.because)
		return nil
	}
	if f[0] == "handover" {
		return g.handover(f)
	}
	if x, ok := g.proxyArg(f); ok {
		return g.proxyMove(x, f[0])
	}
	n, err := g.nodeArg(f, 1)
	if err != nil {
		return err
	}
	switch f[0] {
	case "tick":
		times := 1
		if len(f) > 2 {
			if times, err = argInt(f, 2); err != nil || times < 1 || times > campaignTicksMax {
				return illegal("tick N [TIMES], TIMES from 1 to %d", campaignTicksMax)
			}
		}
		return g.tickTimes(n, times)
	case "campaign":
		return g.campaign(n)
	case "crash":
		if !n.up() {
			return illegal("node %d is already down", n.id)
		}
		n.store.Crash()
		n.node = nil
		g.narrate("node %d crashed", n.id)
		return nil
	case "restart":
		return g.restart(n)
	case "wipe":
		if n.up() {
			return illegal("crash node %d first: a disk is wiped while its machine is down", n.id)
		}
		n.store.Wipe()
		n.wiped = true
		g.narrate("node %d's disk is erased", n.id)
		return nil
	case "rot":
		s, err := argInt(f, 2)
		if err != nil {
			return err
		}
		if !n.store.Rot(paxos.Slot(s)) {
			return illegal("node %d holds no record at slot %d", n.id, s)
		}
		g.narrate("the record of slot %d on node %d's disk rots", s, n.id)
		return nil
	case "write":
		return g.write(n, strings.Join(f[2:], " "))
	case "truncate":
		s, err := argInt(f, 2)
		if err != nil {
			return err
		}
		return g.propose(n, journal.Truncate(writerFence, journal.Seq(s)), fmt.Sprintf("truncate below %d", s))
	case "read":
		if !n.up() {
			return illegal("node %d is down", n.id)
		}
		g.readCtx++
		if !n.node.QuorumRead(g.readCtx) {
			return illegal("node %d cannot open a read now (it knows no configuration to read from)", n.id)
		}
		n.reads[g.readCtx] = paxos.ReadState{}
		g.narrate("node %d opens read #%d", n.id, g.readCtx)
		g.drain(n)
		return nil
	case "handoff":
		to, err := g.nodeArg(f, 2)
		if err != nil {
			return err
		}
		if !n.up() || !n.node.IsLeader() {
			return illegal("node %d does not lead", n.id)
		}
		if err := n.node.RelinquishTo(to.id); err != nil {
			// A refusal is the lesson, not a mistake: it is played, so
			// the goal can see it was tried.
			g.fact("handoff-refused")
			g.narrate("node %d refuses to hand on: %s", n.id, plain(err))
			return nil
		}
		g.narrate("node %d hands its leadership to node %d", n.id, to.id)
		g.drain(n)
		return nil
	case "reconfigure":
		return g.reconfigure(n, f)
	case "retire":
		return g.retire(n)
	}
	return illegal("no move %q", f[0])
}

func argInt(f []string, i int) (int, error) {
	if len(f) <= i {
		return 0, illegal("%s needs %d arguments", f[0], i)
	}
	v, err := strconv.Atoi(f[i])
	if err != nil || v < 0 {
		return 0, illegal("%q is not a number", f[i])
	}
	return v, nil
}

func (g *game) nodeArg(f []string, i int) (*gnode, error) {
	v, err := argInt(f, i)
	if err != nil {
		return nil, err
	}
	n := g.node(paxos.NodeID(v))
	if n == nil {
		return nil, illegal("there is no node %d", v)
	}
	if n.retired {
		return nil, illegal("node %d is retired", v)
	}
	return n, nil
}

func (g *game) tick(n *gnode) error { return g.tickTimes(n, 1) }

// tickTimes ticks node n's clock times times and says what it did.
func (g *game) tickTimes(n *gnode, times int) error {
	if !n.up() {
		return illegal("node %d is down", n.id)
	}
	before, sent := snapshotOf(n), g.next
	for range times {
		n.node.Tick()
		g.drain(n)
		if n.id == recHost && g.rec != nil {
			g.rec.Tick()
			g.pumpHandover()
		}
	}
	g.narrateChange(n, before)
	g.narrateSent(n, sent)
	return nil
}

// narrateSent says which messages node n sent since message number from.
func (g *game) narrateSent(n *gnode, from int) {
	var kinds []string
	count := map[string]int{}
	for _, f := range g.pool {
		if f.id >= from && f.msg.From == n.id {
			k := kindOf(f.msg)
			if count[k] == 0 {
				kinds = append(kinds, k)
			}
			count[k]++
		}
	}
	for _, k := range kinds {
		g.narrate("node %d sends %d %s", n.id, count[k], k)
	}
}

// compact keeps, of the lines that report a node's progress, only the last
// one per node: a burst of deliveries reads as where each node ended.
func compact(lines []string) []string {
	key := func(l string) string {
		for _, marker := range []string{" knows slots through ", "'s floor moves to "} {
			if i := strings.Index(l, marker); i >= 0 {
				return l[:i] + marker
			}
		}
		return ""
	}
	last := map[string]int{}
	for i, l := range lines {
		if k := key(l); k != "" {
			last[k] = i
		}
	}
	var out []string
	same := map[string]int{}
	for i, l := range lines {
		if k := key(l); k == "" || last[k] == i {
			if same[l]++; same[l] == 1 {
				out = append(out, l)
			}
		}
	}
	for i, l := range out {
		if same[l] > 1 {
			out[i] = fmt.Sprintf("%s (×%d)", l, same[l])
		}
	}
	return out
}

func (g *game) campaign(n *gnode) error {
	if !n.up() {
		return illegal("node %d is down", n.id)
	}
	if n.node.IsLeader() || n.cfg.Replica {
		return illegal("node %d does not campaign: it leads or never votes", n.id)
	}
	for range campaignTicksMax {
		due := n.node.CampaignDue()
		if err := g.tick(n); err != nil {
			return err
		}
		if due {
			return nil
		}
	}
	return illegal("node %d did not campaign in %d ticks", n.id, campaignTicksMax)
}

func (g *game) restart(n *gnode) error {
	if n.up() {
		return illegal("node %d is up", n.id)
	}
	if err := g.boot(n); err != nil {
		n.refused = plain(err)
		if errors.Is(err, storage.ErrAmnesia) {
			n.refused = "its disk has no format marker: a member with an empty disk has forgotten its votes (amnesia)"
		}
		g.fact("boot-refused")
		g.narrate("node %d refuses to start: %s", n.id, n.refused)
		return nil
	}
	g.narrate("node %d starts from its disk: promise %s, floor %d, chosen %d", n.id,
		ballotText(n.node.Promised()), n.node.Floor(), n.node.ChosenIndex())
	return nil
}

// proxyArg is the proxy leader a crash or restart names, if it names one.
func (g *game) proxyArg(f []string) (*gproxy, bool) {
	if len(f) < 2 || (f[0] != "crash" && f[0] != "restart") {
		return nil, false
	}
	v, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, false
	}
	x := g.proxyOf(paxos.NodeID(v))
	return x, x != nil
}
