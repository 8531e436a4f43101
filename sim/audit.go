package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/sim/lincheck"
	"github.com/parosdb/paros/storage"
)

// audit holds the oracles. Each is named by a stable claim string, so a
// failure names the rule it broke in words a search finds. It observes through
// host.Observer and by reading stores and nodes; it changes nothing.
type audit struct {
	// sets is the chosen matchmaker set of each generation (handover.go).
	sets map[uint64]paxos.MatchmakerSet
	// votes are the acceptors' reported durable votes (proxy.go), kept
	// only when the seed runs proxies.
	votes map[proxyVote][]paxos.NodeID
	// forged are the values impostors sent (forgery.go): none is ever
	// voted or chosen.
	forged map[jforged]bool
	// shapeOf is the seed's journals by id (eachLiveNode).
	shapeOf    map[journal.ID]JournalShape
	w          *World
	violations []string
	gates      map[string]int
	// per journal and slot: the command and verdict the first node folded.
	chosen  map[jslot]journal.Command
	verdict map[jslot]journal.Outcome
	// durable promise per (node, journal): never decreases.
	promise    map[njournal]paxos.Ballot
	memPromise map[njournal]incBallot
	hotChecked map[njournal]incSlot
	// record bytes per position, and the folding chain per position.
	records map[jpos]uint64
	// acked holds the record the client library reported written at each
	// position (a completed append, an accepted multi-writer write).
	acked  map[jpos]uint64
	chains map[jpos]uint64
	// cfg holds the reconfiguration oracles' state (audit_config.go).
	cfg configAudit
	// writeSlots holds the slots of accepted writes, per journal, when the
	// seed runs replicas (replica.go).
	writeSlots map[journal.ID][]paxos.Slot
	// ledger holds every vote each acceptor cast (votes.go).
	ledger voteLedger
}

type jslot struct {
	j journal.ID
	s paxos.Slot
}
type njournal struct {
	n paxos.NodeID
	j journal.ID
}
type incSlot struct {
	node *paxos.Node
	s    paxos.Slot
}
type incBallot struct {
	node *paxos.Node // the journal's incarnation (a reopened journal is a new node)
	b    paxos.Ballot
}
type jpos struct {
	j journal.ID
	s journal.Seq
}

func newAudit(w *World) *audit {
	return &audit{w: w, gates: map[string]int{}, chosen: map[jslot]journal.Command{}, verdict: map[jslot]journal.Outcome{},
		promise: map[njournal]paxos.Ballot{}, memPromise: map[njournal]incBallot{}, hotChecked: map[njournal]incSlot{}, records: map[jpos]uint64{}, acked: map[jpos]uint64{}, chains: map[jpos]uint64{},
		cfg: newConfigAudit(), writeSlots: map[journal.ID][]paxos.Slot{}, ledger: newVoteLedger()}
}

func (a *audit) violation(claim, format string, args ...any) {
	msg := fmt.Sprintf("%s: %s (at %.3fms)", claim, fmt.Sprintf(format, args...), float64(a.w.sched.now)/float64(ms))
	a.violations = append(a.violations, msg)
	a.w.sched.note("VIOLATION %s", msg)
}

func (a *audit) gate(name string) { a.gates[name]++ }

// Applied implements host.Observer: a slot folded on a node, released
// once its batch was durable.
func (a *audit) Applied(node paxos.NodeID, j journal.ID, c paxos.Applied) {
	a.forgedChosen(node, j, c)
	k := jslot{j, c.Slot}
	if prev, ok := a.chosen[k]; ok {
		if !prev.Equal(c.Command) {
			a.violation("at most one value is ever chosen for a slot", "journal %s slot %d: %s on n%d, %s before", short(j), c.Slot, c.Command, node, prev)
		}
		want := a.verdict[k]
		got := c.Outcome
		switch {
		case got.Kind == journal.Unheld || want.Kind == journal.Unheld:
			if other := max(got.Kind, want.Kind); other != journal.Unheld && other != journal.Duplicate && other != journal.Refused {
				a.violation("journal: every node judges a slot to the same outcome", "journal %s slot %d: %s on n%d, %s before", short(j), c.Slot, got, node, want)
			}
		case got.Kind != want.Kind || got.Seq != want.Seq || got.Count != want.Count || got.View != want.View:
			a.violation("journal: every node judges a slot to the same outcome", "journal %s slot %d: %s %+v on n%d, %s %+v before", short(j), c.Slot, got, got.View, node, want, want.View)
		}
	} else {
		a.chosen[k] = c.Command
		a.verdict[k] = c.Outcome
		a.backed(node, j, c)
		a.acceptedWrite(j, c)
		a.w.holdCommitted(j)
	}
	if c.Outcome.Kind == journal.Accepted && c.Command.Kind == journal.KindWrite && c.Command.Entry.Leader.IsSet() &&
		c.Command.Entry.Leader != c.State.Leader {
		a.violation("journal: a write is accepted only from the writer in force", "slot %d", c.Slot)
	}
}

// backed checks, when a slot is first folded anywhere, that a Phase-2
// quorum of disks durably holds its value: nothing announces a decision
// before the votes behind it are on disk. A disk that already dropped the
// slot below its floor, a rotted record (its identity survived) and a
// wiped disk (its history is unknown) count as holding it.
//
// With matchmakers the quorum is asked of the configuration of the ballot
// the value is held at (a value re-proposed at a later ballot is backed by
// that ballot's configuration); a retired machine's deleted store counts
// as holding it too (it held its vote while it was an acceptor).
func (a *audit) backed(node paxos.NodeID, j journal.ID, c paxos.Applied) {
	var always []paxos.NodeID
	at := map[paxos.Ballot][]paxos.NodeID{}
	for _, p := range a.w.procs {
		st := p.stores[j]
		if p.replica() {
			continue // a replica's Learned record is no vote
		}
		if st == nil {
			if p.retired[j] {
				always = append(always, p.id)
			}
			continue
		}
		if p.wiped || st.FirstSlot() > c.Slot {
			always = append(always, p.id)
			continue
		}
		if b, cmd, ok := st.Accepted(c.Slot); ok && cmd.Equal(c.Command) {
			at[b] = append(at[b], p.id)
		} else if _, ok := st.FaultyAt(c.Slot); ok {
			always = append(always, p.id)
		}
	}
	if len(a.w.shape.Matchmakers) == 0 {
		holders := always
		for _, ids := range at {
			holders = append(holders, ids...)
		}
		sys := a.w.system()
		if sys.Phase2(c.Slot, sys.SetOf(holders...), 0) != quorum.Won {
			a.violation("a decision is announced only once a Phase-2 quorum holds it on disk",
				"%s slot %d folded on n%d, durable on %v only", short(j), c.Slot, node, holders)
		}
		return
	}
	// A node's record holds the value at the newest ballot it accepted it
	// at (a leader that recovered a chosen value re-proposes it, and the
	// upsert replaces the older record), so the quorum that chose it may be
	// one of an older configuration: the value is backed when its holders,
	// at any ballot, form a Phase-2 quorum of a configuration bound to a
	// ballot at or below the newest one they hold it at.
	holders := slices.Clone(always)
	var newest paxos.Ballot
	for b, ids := range at {
		holders = append(holders, ids...)
		if newest.Less(b) {
			newest = b
		}
	}
	// When no holder has a record left (each truncated past the slot, or
	// was wiped), nothing shows the ballot the value was held at, and any
	// configuration bound so far may be the one that chose it: the ballot
	// test would otherwise refuse every configuration (seed 3105740: n2
	// wiped, n4 folded slot 9 and truncated past it in one batch).
	for _, bs := range a.cfg.systems[j] {
		if (len(at) == 0 || !newest.Less(bs.first)) && bs.sys.Phase2(c.Slot, bs.sys.SetOf(holders...), 0) == quorum.Won {
			return
		}
	}
	a.violation("a decision is announced only once a Phase-2 quorum holds it on disk",
		"%s slot %d folded on n%d, durable on %v only", short(j), c.Slot, node, holders)
}

// promises checks, after every event a process handles, that no live
// node's promise fell below what it promised earlier in its incarnation (a
// boot or a reopen after quarantine starts from the durable promise, which
// synced checks across incarnations).
func (a *audit) promises(p *proc, js JournalShape, k njournal, n *paxos.Node) {
	if seen, ok := a.memPromise[k]; ok && seen.node == n && n.Promised().Less(seen.b) {
		a.violation("a node's promised ballot never decreases", "n%d %s: %s after %s in one boot", p.id, short(js.ID), n.Promised(), seen.b)
	}
	a.memPromise[k] = incBallot{node: n, b: n.Promised()}
}

// nodeChecks runs the per-node checks of every node the last event of
// process p touched.
func (a *audit) nodeChecks(p *proc) {
	a.eachLiveNode(p, func(js JournalShape, k njournal, n *paxos.Node) {
		a.promises(p, js, k, n)
		a.evicted(p, js, k, n)
	})
}

// eachLiveNode calls fn for every journal node of a live process that the
// last event may have changed: those its host drained since the last call
// (a node no event touched is as the last check left it). A walk over
// every journal after every event made a seed with a few hundred journals
// several times slower. Only one caller may take them: after() calls
// eachLiveNode once per event and hands each node to every check.
func (a *audit) eachLiveNode(p *proc, fn func(js JournalShape, k njournal, n *paxos.Node)) {
	if p.h == nil || !p.up {
		return
	}
	if a.shapeOf == nil {
		a.shapeOf = make(map[journal.ID]JournalShape, len(a.w.shape.Journals))
		for _, js := range a.w.shape.Journals {
			a.shapeOf[js.ID] = js
		}
	}
	p.h.TakeTouched(func(id journal.ID, n *paxos.Node) {
		if js, ok := a.shapeOf[id]; ok {
			fn(js, njournal{p.id, id}, n)
		}
	})
}

// evicted checks, after every event a process handles, that every slot a
// live node moved out of its hot window is on its disk (cold.go, rule 2):
// a record evicted before it was durable would be read back as missing,
// or lost with a crash while the node believes it held it.
func (a *audit) evicted(p *proc, js JournalShape, k njournal, n *paxos.Node) {
	seen := a.hotChecked[k]
	from := max(n.Floor(), seen.s)
	if seen.node != n {
		from = n.Floor()
	}
	for s := from; s < n.HotBase(); s++ {
		if _, _, ok := p.stores[js.ID].Accepted(s); !ok && !a.w.damagedHere(p, js.ID, s) {
			a.violation("storage: an evicted record is always on disk", "n%d %s: slot %d evicted (hot base %d) but not durable",
				p.id, short(js.ID), s, n.HotBase())
			break
		}
	}
	a.hotChecked[k] = incSlot{node: n, s: n.HotBase()}
}

// synced checks the durable promise after every completed sync.
func (a *audit) synced(p *proc, j journal.ID) {
	k := njournal{p.id, j}
	got := p.stores[j].InitialState().Promised
	if got.Less(a.promise[k]) {
		a.violation("a node's promised ballot never decreases", "n%d %s: %s after %s", p.id, short(j), got, a.promise[k])
	}
	a.promise[k] = got
}

// booted checks the boot refusals a start must give.
func (a *audit) booted(p *proc, edited bool) {
	for _, js := range a.w.shape.Journals {
		if !p.serves(js.ID) {
			continue
		}
		st, err := p.h.Status(js.ID)
		switch {
		case p.wiped:
			if st != host.Down || !errors.Is(err, storage.ErrAmnesia) {
				a.violation("a wiped node is refused as amnesia", "n%d %s: %v %v", p.id, short(js.ID), st, err)
			} else {
				a.gate("a wiped node's boot is refused as amnesia")
			}
		case edited:
			if st != host.Down || !errors.Is(err, storage.ErrConfigMismatch) {
				a.violation("a restart under an edited configuration is refused", "n%d %s: %v %v", p.id, short(js.ID), st, err)
			} else {
				a.gate("a restart under an edited configuration is refused")
			}
		default:
			if st != host.Live {
				a.violation("a member boots from its own store", "n%d %s: %v %v", p.id, short(js.ID), st, err)
			}
		}
	}
}

func (a *audit) stopped(p *proc, err error) {
	var ioe *storage.IOError
	// A record rotted under a running machine fails the cold read that
	// meets it before the scrubber does: that journal reboots from its
	// store (whose boot classifies the damage), and a process whose every
	// journal is down stops.
	coldRot := errors.Is(err, paxos.ErrColdRead) && a.w.rotRunningPlanted(p)
	if !p.wiped && !errors.As(err, &ioe) && !coldRot {
		a.violation("a process stops only when every journal is down", "n%d: %v", p.id, err)
	}
}

// record checks that every client reads the same bytes at a position.
func (a *audit) record(j journal.ID, s journal.Seq, rec []byte) {
	k := jpos{j, s}
	fp := lincheck.RecordPrint(rec)
	if prev, ok := a.records[k]; ok && prev != fp {
		a.violation("journal read: every client reads the same record at a position", "%s@%d", short(j), s)
	}
	if ack, ok := a.acked[k]; ok && ack != fp {
		a.violation("client: a write the library reports written holds its bytes at its position", "%s@%d read other bytes", short(j), s)
	}
	a.records[k] = fp
}

// ack records that the client library reported recs written from s.
func (a *audit) ack(j journal.ID, s journal.Seq, recs [][]byte) {
	a.w.reg.board.acked(a.w, j, s, len(recs))
	for i, rec := range recs {
		k := jpos{j, s + journal.Seq(i)}
		fp := lincheck.RecordPrint(rec)
		if prev, ok := a.acked[k]; ok && prev != fp {
			a.violation("client: a write the library reports written holds its bytes at its position", "%s@%d acked twice with other bytes", short(j), k.s)
		}
		if read, ok := a.records[k]; ok && read != fp {
			a.violation("client: a write the library reports written holds its bytes at its position", "%s@%d was read with other bytes", short(j), k.s)
		}
		a.acked[k] = fp
	}
}

// ackedInLog checks, at the end of the tail, that every position the
// client library reported written and not truncated since holds the
// acknowledged bytes on a converged node.
func (a *audit) ackedInLog() {
	byJournal := map[journal.ID][]journal.Seq{}
	for k := range a.acked {
		byJournal[k.j] = append(byJournal[k.j], k.s)
	}
	for _, js := range a.w.shape.Journals {
		if a.w.lostJournal(js.ID) {
			continue // halted beyond the budget (unrecoverableHeld)
		}
		var n *paxos.Node
		for _, p := range a.w.procs {
			if p.up && p.h != nil {
				if x := p.h.Node(js.ID); x != nil && (n == nil || x.Applied() > n.Applied()) {
					n = x
				}
			}
		}
		if n == nil {
			continue
		}
		seqs := byJournal[js.ID]
		slices.Sort(seqs)
		for _, s := range seqs {
			if s < n.State().FirstSeq {
				continue
			}
			r := n.ReadLog(s, 1, 1<<20)
			switch {
			case r.Kind == paxos.ReadNotHeld:
			case r.Kind != paxos.ReadPage || len(r.Records) != 1:
				a.violation("client: a write the library reports written holds its bytes at its position",
					"%s@%d is not in the log (next %d)", short(js.ID), s, n.State().NextSeq)
			case lincheck.RecordPrint(r.Records[0]) != a.acked[jpos{js.ID, s}]:
				a.violation("client: a write the library reports written holds its bytes at its position",
					"%s@%d holds other bytes", short(js.ID), s)
			}
		}
	}
}

func (a *audit) chainAt(c *client, s journal.Seq, h uint64) {
	k := jpos{c.j.ID, s}
	if prev, ok := a.chains[k]; ok && prev != h {
		a.violation("chain: every client folds the same record to the same state", "c%d %s@%d", c.idx, short(c.j.ID), s)
	}
	a.chains[k] = h
}

// converged checks the end of the tail: every live node of a journal
// reached the same chosen prefix and state.
//
// With matchmakers only the members of the configuration in force (the
// newest any live node believes) must converge: a removed node stops
// hearing Commits, and is retired rather than kept in step.
// everyJournalLed checks liveness at the end of the tail: every journal
// with a quorum of its newest configuration up has a leader at or above
// every up member's promise. A quiet journal whose leader's machine died
// must have been woken and re-elected on its own: idle journals have no
// client whose call would wake them.
func (a *audit) everyJournalLed() {
	a.journalsLed(tailLedClaim, func(JournalShape) bool { return true })
}

const tailLedClaim = "liveness: every journal with a quorum up has a leader at the end of the tail"

// manyJournals is the size from which a seed's cell counts as one of many
// journals (shape.go draws 50 to 300 idle journals on some seeds).
const manyJournals = 50

// matchmakersUp reports whether a majority of the newest matchmaker set
// any up node of journal j follows is up (always, on a plain deployment):
// an election needs one (a set the operator shrank to two members, one of
// them wiped, can never elect again).
func (a *audit) matchmakersUp(j journal.ID) bool {
	if len(a.w.shape.Matchmakers) == 0 {
		return true
	}
	var newest paxos.MatchmakerSet
	for _, p := range a.w.procs {
		if p.up && p.h != nil {
			if n := p.h.Node(j); n != nil && newest.Generation < n.MatchmakerSet().Generation {
				newest = n.MatchmakerSet()
			}
		}
	}
	live := 0
	for _, id := range newest.Members {
		if p := a.w.proc(id); p != nil && p.up {
			live++
		}
	}
	return live >= len(newest.Members)/2+1
}

// journalsLed checks, for every journal which picks, that a quorum of its
// newest configuration up means a leader at or above every up member's
// promise; a journal without one is a violation of claim.
func (a *audit) journalsLed(claim string, which func(JournalShape) bool) {
	// manyLed: the end-of-tail check of a cell of a few hundred journals
	// has found no journal short of a leader (its own gate).
	manyLed := len(a.w.shape.Journals) >= manyJournals && claim == tailLedClaim
	for _, js := range a.w.shape.Journals {
		if a.w.lostJournal(js.ID) || !which(js) {
			continue
		}
		var newest paxos.Configuration
		for _, p := range a.w.procs {
			if p.up && p.h != nil && !p.replica() {
				if n := p.h.Node(js.ID); n != nil && newest.Ballot.Less(n.Configuration().Ballot) {
					newest = n.Configuration()
				}
			}
		}
		sys := newest.Acceptors
		if sys.IsZero() {
			sys = a.w.system()
		}
		var up []paxos.NodeID
		var leader *paxos.Node
		var promised paxos.Ballot
		for _, p := range a.w.procs {
			if !p.up || p.h == nil || p.replica() || !sys.Contains(p.id) {
				continue
			}
			n := p.h.Node(js.ID)
			if n == nil {
				continue
			}
			up = append(up, p.id)
			if promised.Less(n.Promised()) {
				promised = n.Promised()
			}
			if n.IsLeader() && (leader == nil || leader.LeaderBallot().Less(n.LeaderBallot())) {
				leader = n
			}
		}
		if set := sys.SetOf(up...); sys.Phase1(set, 0) != quorum.Won || !sys.Phase2Everywhere(set) || !a.matchmakersUp(js.ID) {
			// No Phase-1 quorum up, or not a Phase-2 quorum of every grid
			// column (a leader that cannot commit every slot steps down,
			// CheckQuorum), or no matchmaker majority to elect through: no
			// leader is owed.
			continue
		}
		if leader == nil || leader.LeaderBallot().Less(promised) {
			a.violation(claim, "%s: up %v, leader %v, highest promise %v", short(js.ID), up, leader != nil, promised)
			manyLed = false
			continue
		}
		if js.Idle {
			a.gate("liveness: an idle journal has a leader at the end of the tail")
		}
	}
	if manyLed {
		a.gate("many journals: every journal of a cell of a few hundred has a leader at the end of the tail")
	}
}

func (a *audit) converged() bool {
	ok := true
	for _, js := range a.w.shape.Journals {
		if a.w.lostJournal(js.ID) {
			continue // halted beyond the budget (unrecoverableHeld)
		}
		var top paxos.Slot
		var nodes []*paxos.Node
		var newest paxos.Configuration
		for _, p := range a.w.procs {
			if p.up && p.h != nil {
				if n := p.h.Node(js.ID); n != nil && newest.Ballot.Less(n.Configuration().Ballot) {
					newest = n.Configuration()
				}
			}
		}
		for _, p := range a.w.procs {
			if !p.up || p.h == nil {
				continue
			}
			if n := p.h.Node(js.ID); n != nil {
				if len(a.w.shape.Matchmakers) > 0 && !newest.Acceptors.Contains(p.id) && !p.replica() {
					continue
				}
				if p.replica() && !slices.Contains(a.w.replicaSet, p.id) {
					continue // removed: no acceptor answers it any more
				}
				nodes = append(nodes, n)
				top = max(top, n.Applied())
			}
		}
		for _, n := range nodes {
			if n.Applied() != top || n.State().View() != nodes[0].State().View() {
				ok = false
				a.violation("every node converges to the cluster's chosen prefix at the end of the settle tail",
					"%s: n%d applied %d (%s), top %d", short(js.ID), n.ID(), n.Applied(), n.Role(), top)
			}
		}
	}
	if ok {
		a.gate("every node converges at the end of the tail")
	}
	return ok
}

// durableQuorums: across every disk, one command per (slot, ballot), and a
// Phase-2 quorum of durable accepts decides only the folded value.
func (a *audit) durableQuorums() {
	for _, js := range a.w.shape.Journals {
		type key struct {
			s paxos.Slot
			b paxos.Ballot
		}
		vals := map[key]journal.Command{}
		votes := map[key][]paxos.NodeID{}
		for _, p := range a.w.procs {
			if p.wiped || p.stores[js.ID] == nil {
				continue
			}
			for _, r := range p.stores[js.ID].Records() {
				k := key{r.Slot, r.Ballot}
				if v, ok := vals[k]; ok && !v.Equal(r.Command) {
					a.violation("at most one command is ever accepted for one (slot, ballot)", "%s slot %d ballot %s", short(js.ID), r.Slot, r.Ballot)
				}
				vals[k] = r.Command
				if p.replica() {
					continue // a replica's Learned record is no vote
				}
				votes[k] = append(votes[k], p.id)
			}
		}
		keys := make([]key, 0, len(votes))
		for k := range votes {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(x, y key) int {
			if x.s != y.s {
				return int(x.s) - int(y.s)
			}
			return x.b.Compare(y.b)
		})
		for _, k := range keys {
			// A ballot's votes count in the configuration it is bound to.
			sys, ok := a.configOf(js.ID, k.b)
			if !ok || sys.Phase2(k.s, sys.SetOf(votes[k]...), 0) != quorum.Won {
				continue
			}
			if c, ok := a.chosen[jslot{js.ID, k.s}]; ok && !c.Equal(vals[k]) {
				a.violation("a durable accept quorum never decides two values for a slot", "%s slot %d", short(js.ID), k.s)
			}
		}
	}
}
