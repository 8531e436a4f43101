package play

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// The world is the real core with the player as its network and clock:
// real paxos.Nodes over memstore disks, real matchmakers over memstore
// registry stores, and one pool of messages in flight that moves only
// when the player moves it. The driver loop is the one every host keeps:
// a Ready's writes are applied and synced before its messages enter the
// pool, so the world never lets a message leave ahead of the vote it
// reports. Nothing here reads a clock or draws a random number, so a
// level and its move log always rebuild the same world: undo, shared
// links and the judging of answers (on a rebuilt copy) all rest on that.

// playJournal is the one journal every level runs.
var playJournal = journal.ID{Tenant: 1, Journal: 1}

// The client's writer fence: the one application of every level.
var writerFence = journal.LeaderUUID{Hi: 0xC11E, Lo: 1}

// recHost is the machine the operator's handover tool runs on.
const recHost paxos.NodeID = 1

// Limits of a world.
const (
	// machinesMax bounds a level's machines (the page draws them all).
	machinesMax = 12
	// quietMax bounds the deliveries of one "run" move: a world that does
	// not fall quiet by then is livelocked (two campaigns duelling).
	quietMax = 2000
	// campaignTicksMax bounds the ticks of one "campaign" move.
	campaignTicksMax = 200
)

// gnode is one node process and its disk.
type gnode struct {
	id    paxos.NodeID
	cfg   paxos.Config
	node  *paxos.Node // nil while down
	store *memstore.Store
	// refused holds why the last restart was refused (a wiped disk).
	refused string
	wiped   bool
	retired bool
	// reads maps a read's ctx to what it was answered (0: pending).
	reads map[uint64]paxos.ReadState
}

func (n *gnode) up() bool { return n.node != nil }

// gmm is one matchmaker and its registry store.
type gmm struct {
	id    paxos.NodeID
	mm    *matchmaker.Matchmaker
	store *memstore.RegistryStore
}

// gproxy is one proxy leader: it holds no disk (it decides nothing and
// promises nothing), so a crash loses only its open rounds.
type gproxy struct {
	id    paxos.NodeID
	proxy *paxos.Proxy // nil while down
}

// flight is one message in the pool, with the number the player names it
// by (stable for the life of the message): a protocol message, or (hv set)
// a message of a matchmaker-set handover.
type flight struct {
	id  int
	msg paxos.Message
	hv  *matchmaker.Handover
}

// game is one position of one level.
type game struct {
	level *Level
	opts  paxos.Options
	sys   quorum.System
	nodes []*gnode
	mms   []*gmm
	pxs   []*gproxy
	// rec is the handover the operator started (nil: none); it runs on
	// node recHost's machine, as the operator's tool does.
	rec     *matchmaker.Reconfigurer
	recStep matchmaker.ReconfigurerStep // the step last narrated
	pool    []flight
	next    int // the next message number
	// log and timeline: the moves accepted and what each did.
	log      []string
	timeline []Event
	// written counts the client's writes proposed; readCtx numbers reads.
	written int
	readCtx uint64
	// facts are what happened that a goal may ask about (a refusal taken,
	// a stray vote ignored, a prompt answered), by name.
	facts map[string]int
	// votes are the Accepted votes delivered, by slot and ballot: who
	// voted (votedKey).
	votes map[string]map[paxos.NodeID]bool
	// prompt is the open question, if any.
	prompt *prompt
	// narration collects what the current move did.
	narration []string
}

func newGame(l *Level) (*game, error) {
	s := l.Setup
	n := s.Acceptors + s.Replicas + s.Spares
	if all := n + s.Matchmakers + s.SpareMatchmakers + s.Proxies; s.Acceptors < 1 || all > machinesMax {
		return nil, fmt.Errorf("a level has 1 to %d machines, not %d", machinesMax, all)
	}
	ids := make([]quorum.ID, s.Acceptors)
	for i := range ids {
		ids[i] = quorum.ID(i + 1)
	}
	sys, err := quorum.New(ids, s.Quorum)
	if err != nil {
		return nil, err
	}
	g := &game{level: l, sys: sys, next: 1, facts: map[string]int{}, votes: map[string]map[paxos.NodeID]bool{},
		opts: paxos.Options{ElectionTicks: 10, HeartbeatTicks: 2, ProxyTakeBackBeats: 3}}
	var mmIDs, replicas, proxies []paxos.NodeID
	for i := range s.Proxies {
		id := paxos.NodeID(201 + i)
		proxies = append(proxies, id)
		g.pxs = append(g.pxs, &gproxy{id: id, proxy: paxos.NewProxy(id, paxos.ProxyOptions{BeatTicks: g.opts.HeartbeatTicks})})
	}
	for i := range s.Matchmakers {
		mmIDs = append(mmIDs, paxos.NodeID(101+i))
	}
	for i := range s.Replicas {
		replicas = append(replicas, paxos.NodeID(s.Acceptors+1+i))
	}
	spares := make([]paxos.NodeID, s.SpareMatchmakers)
	for i := range spares {
		spares[i] = paxos.NodeID(101 + s.Matchmakers + i)
	}
	for _, id := range slices.Concat(mmIDs, spares) {
		st := memstore.NewRegistry()
		if err := st.Format(storage.RegistryMarker{Node: id, Matchmakers: mmIDs}); err != nil {
			return nil, err
		}
		x := &gmm{id: id, store: st}
		if err := g.bootMM(x); err != nil {
			return nil, err
		}
		g.mms = append(g.mms, x)
	}
	for i := range n {
		id := paxos.NodeID(i + 1)
		cfg := paxos.Config{ID: id, Acceptors: sys, Mode: journal.ModeSingle, Matchmakers: mmIDs, Replicas: replicas, Proxies: proxies}
		switch {
		case i >= s.Acceptors+s.Replicas:
			// A spare is formatted to join the configuration the level
			// moves onto (its first offered reconfiguration).
			cfg.Joiner, cfg.Replicas = true, nil
			if len(s.Reconfigurations) == 0 {
				return nil, fmt.Errorf("spare node %d has no configuration to join", id)
			}
			if cfg.Acceptors, err = parseMembers(s.Reconfigurations[0]); err != nil {
				return nil, err
			}
		case i >= s.Acceptors:
			cfg.Replica = true
		}
		gn := &gnode{id: id, cfg: cfg, store: memstore.New(), reads: map[uint64]paxos.ReadState{}}
		if err := gn.store.Format(g.marker(gn)); err != nil {
			return nil, err
		}
		g.nodes = append(g.nodes, gn)
		if err := g.boot(gn); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// marker is the format marker a node's disk carries: what a restart checks
// before it trusts the disk.
func (g *game) marker(n *gnode) storage.Marker {
	members := slices.Clone(n.cfg.Acceptors.Members())
	if n.cfg.Replica {
		members = slices.Clone(g.sys.Members())
	}
	return storage.Marker{Journal: playJournal, Node: n.id, Members: members, Quorum: n.cfg.Acceptors.Spec(),
		Mode: journal.ModeSingle, Replicas: uint32(g.level.Setup.Replicas), Matchmakers: uint32(g.level.Setup.Matchmakers),
		Joiner: n.cfg.Joiner, Replica: n.cfg.Replica}
}

// boot starts a node from its disk, as a process does: the disk must carry
// this member's format marker (an existing member with none has lost its
// votes, and rejoining would let it vote twice).
func (g *game) boot(n *gnode) error {
	bs, err := n.store.Boot()
	if err != nil {
		return err
	}
	if _, err := storage.CheckBoot(storage.ClaimExistingMember, bs.Marker, g.marker(n)); err != nil {
		return err
	}
	node, err := paxos.NewNode(n.cfg, g.opts, bs)
	if err != nil {
		return err
	}
	n.node, n.refused = node, ""
	n.reads = map[uint64]paxos.ReadState{}
	g.drain(n)
	return nil
}

func (g *game) bootMM(x *gmm) error {
	bs, err := x.store.Boot()
	if err != nil {
		return err
	}
	mm, err := matchmaker.New(x.id, bs.Generation, bs.Registries)
	if err != nil {
		return err
	}
	x.mm = mm
	return nil
}

// drain runs the Ready/Advance loop of one node: persist and sync the
// batch, then let its messages into the pool, answer its reads, advance.
func (g *game) drain(n *gnode) {
	for n.up() && n.node.HasReady() {
		rd := n.node.Ready()
		if err := n.store.Apply(rd.Writes, true); err != nil {
			panic(fmt.Sprintf("paros/play: memstore refused a write: %v", err))
		}
		n.node.MarkDurable(rd.Batch)
		for _, m := range rd.Messages {
			g.send(m)
		}
		for _, rs := range rd.ReadStates {
			n.reads[rs.Ctx] = rs
			if rs.OK {
				g.narrate("node %d serves read #%d: everything through slot %d", n.id, rs.Ctx, rs.Index)
			} else {
				g.narrate("node %d cannot serve read #%d", n.id, rs.Ctx)
			}
		}
		n.node.Advance()
		if n.node.WantsElectionTimeout() {
			// The core draws no randomness: a fixed spread by id keeps
			// the world deterministic and the campaigns apart.
			n.node.SetElectionTimeout(g.opts.ElectionTicks + 3*int(n.id))
		}
	}
}

func (g *game) drainMM(x *gmm) {
	for x.mm != nil && x.mm.HasReady() {
		rd := x.mm.Ready()
		if err := x.store.Apply(rd.Writes); err != nil {
			panic(fmt.Sprintf("paros/play: memstore refused a registry write: %v", err))
		}
		for _, env := range rd.Messages {
			g.send(env.Msg)
		}
		for _, h := range rd.Handovers {
			g.sendHandover(h)
		}
		x.mm.Advance()
	}
}

func (g *game) send(m paxos.Message) {
	g.pool = append(g.pool, flight{id: g.next, msg: m})
	g.next++
}

func (g *game) sendHandover(h matchmaker.Handover) {
	g.pool = append(g.pool, flight{id: g.next, hv: &h})
	g.next++
}

// pumpHandover sends what the reconfigurer has to send.
func (g *game) pumpHandover() {
	if g.rec == nil {
		return
	}
	for _, h := range g.rec.Messages() {
		g.sendHandover(h)
	}
	if step := g.rec.Step(); step != g.recStep {
		g.recStep = step
		g.narrate("the handover is %s", step)
	}
}

// deliverFlight hands a flight to its addressee.
func (g *game) deliverFlight(f flight) {
	if f.hv == nil {
		g.deliver(f.msg)
		return
	}
	h := *f.hv
	switch h.Kind {
	case matchmaker.HStop, matchmaker.HBootstrap, matchmaker.HPrepare, matchmaker.HAccept, matchmaker.HChosen:
		x := g.matchmaker(h.To)
		if x == nil || x.mm == nil {
			g.narrate("%s is lost: matchmaker %s is down", h.Kind, name(h.To))
			return
		}
		before := x.mm.Generation()
		x.mm.StepHandover(h)
		g.drainMM(x)
		switch after := x.mm.Generation(); {
		case after.Phase() == before.Phase() && after.Set.Generation == before.Set.Generation:
		case after.Phase() == matchmaker.PhaseInactive:
			g.narrate("matchmaker %s holds the bootstrap, inactive until the decree's outcome", name(x.id))
		default:
			g.narrate("matchmaker %s is %s at generation %d", name(x.id), after.Phase(), after.Set.Generation)
		}
	default:
		if g.rec == nil || h.To != recHost {
			g.narrate("%s is lost: nobody drives a handover at node %s", h.Kind, name(h.To))
			return
		}
		g.rec.StepHandover(h)
		g.pumpHandover()
	}
}

func (g *game) node(id paxos.NodeID) *gnode {
	for _, n := range g.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (g *game) proxyOf(id paxos.NodeID) *gproxy {
	for _, x := range g.pxs {
		if x.id == id {
			return x
		}
	}
	return nil
}

func (g *game) matchmaker(id paxos.NodeID) *gmm {
	for _, x := range g.mms {
		if x.id == id {
			return x
		}
	}
	return nil
}

// flightAt finds message number id in the pool.
func (g *game) flightAt(id int) (int, bool) {
	for i, f := range g.pool {
		if f.id == id {
			return i, true
		}
	}
	return 0, false
}

// deliver steps a message into its addressee; a message to a machine that
// is down is lost, as on a network.
func (g *game) deliver(m paxos.Message) {
	if m.Type.IsMatchmakerRequest() {
		x := g.matchmaker(m.To)
		if x == nil || x.mm == nil {
			g.narrate("%s is lost: matchmaker %s is down", kindOf(m), name(m.To))
			return
		}
		x.mm.Step(playJournal, m)
		g.drainMM(x)
		if m.Type == paxos.MsgMatch && g.facts["handover"] > 0 && x.mm.Generation().Set.Generation >= 2 {
			if reg, ok := x.mm.Registry(playJournal); ok && slices.ContainsFunc(reg.Regs, func(r paxos.Registration) bool { return r.Ballot == m.Ballot }) {
				g.fact("registered-after-handover")
				g.narrate("matchmaker %s registers ballot %s for generation %d", name(x.id), ballotText(m.Ballot), x.mm.Generation().Set.Generation)
			}
		}
		return
	}
	if x := g.proxyOf(m.To); x != nil {
		if x.proxy == nil {
			g.narrate("%s is lost: proxy %s is down", kindOf(m), name(m.To))
			return
		}
		x.proxy.Step(m)
		for _, out := range x.proxy.Messages() {
			g.send(out)
		}
		return
	}
	n := g.node(m.To)
	if n == nil || !n.up() {
		g.narrate("%s is lost: node %s is down", kindOf(m), name(m.To))
		return
	}
	before := snapshotOf(n)
	n.node.Step(m)
	g.drain(n)
	g.narrateChange(n, before)
}

// leader is the node that leads now (the highest ballot among leaders).
func (g *game) leader() *gnode {
	var best *gnode
	for _, n := range g.nodes {
		if n.up() && n.node.IsLeader() && (best == nil || best.node.LeaderBallot().Less(n.node.LeaderBallot())) {
			best = n
		}
	}
	return best
}

func (g *game) narrate(format string, args ...any) {
	g.narration = append(g.narration, fmt.Sprintf(format, args...))
}

func (g *game) fact(name string) { g.facts[name]++ }

// name is how the page names a machine: nodes by number, matchmakers
// m1…, proxy leaders p1….
func name(id paxos.NodeID) string {
	if id > 200 {
		return fmt.Sprintf("p%d", id-200)
	}
	if id > 100 {
		return fmt.Sprintf("m%d", id-100)
	}
	return fmt.Sprintf("%d", id)
}

// ballotText renders a ballot as round.node.
func ballotText(b paxos.Ballot) string {
	if b.IsZero() {
		return "–"
	}
	return fmt.Sprintf("%d.%s", b.Round, name(b.Node))
}
