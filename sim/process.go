package sim

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
)

// proc is one simulated paros process: the shipped host over simulated
// disks (one memstore per journal) and the simulated network.
type proc struct {
	w      *World
	id     paxos.NodeID
	h      *host.Host
	up     bool
	inc    int // incarnation: events of an older one are dropped
	boots  int
	stores map[journal.ID]*memstore.Store
	// diskFree is when the disk finishes the last sync it scheduled, and
	// groupStart when that sync starts (diskSynced).
	diskFree, groupStart int64
	// crashAfterSync arms the "after sync, before send" seam: the next
	// persist completion syncs, then the process dies before it hears.
	crashAfterSync bool
	// failNextPersist injects a storage fault into journal j's next persist.
	failNext map[journal.ID]bool
	// failed: a journal's store after a failed sync, refusing writes until
	// it is reopened.
	failed      map[journal.ID]bool
	pausedUntil int64
	// callInbox holds calls read and not yet handed to the host (only
	// when the shape batches calls); callDrain says a drain is scheduled.
	callInbox   []host.Call
	callDrain   bool
	stale       staleView
	wiped       bool
	downForGood bool
	// joinedLate: the late replica has joined (replica_join.go).
	joinedLate bool
	// heldDown: killed as the leader of quiet journals and kept down past
	// the start of the tail (quiet.go); recoverThenTail leaves it.
	heldDown bool
	// joined holds the spec of each journal this machine joined by
	// reconfiguration; retired, each journal it retired from (its store is
	// deleted, and it never serves the journal again).
	joined  map[journal.ID]host.JournalSpec
	retired map[journal.ID]bool
	// replicaSeq is the operator's replica list this incarnation holds
	// (setReplicas).
	replicaSeq uint64
	// registry is a matchmaker process's store (nil on the others).
	registry *memstore.RegistryStore
	// mmset is the newest chosen matchmaker set the process kept for its
	// next boot (zero: the founding set), as a machine record does.
	mmset paxos.MatchmakerSet
}

// founding reports whether the process is a founding member of the
// journals (spares and matchmakers are not).
func (p *proc) founding() bool { return slices.Contains(p.w.shape.Nodes, p.id) }

// replica reports whether the process is a replica node (replica.go).
func (p *proc) replica() bool { return slices.Contains(p.w.shape.Replicas, p.id) }

// serves reports whether the process serves journal j (as a founder or a
// joiner, and not retired).
func (p *proc) serves(j journal.ID) bool {
	if p.retired[j] {
		return false
	}
	_, joined := p.joined[j]
	return joined || ((p.founding() || p.replica()) && p.stores[j] != nil)
}

// env implements host.Env for one incarnation of a process.
type env struct {
	p   *proc
	inc int
}

// staleView holds back, until `until`, every message of journal that
// carries a ballot above ballot: the news of a successor.
type staleView struct {
	journal journal.ID
	ballot  paxos.Ballot
	until   int64
}

var errInjected = errors.New("sim: injected disk fault")

func (e env) live() bool { return e.p.up && e.p.inc == e.inc }

func (e env) Send(to paxos.NodeID, batch []host.Envelope) {
	if e.live() {
		e.p.w.audit.silent(e.p, to, batch)
		e.p.w.net.send(e.p.id, to, batch)
	}
}

func (e env) Persist(t host.Token, j journal.ID, ops []paxos.WriteOp, sync bool) {
	p := e.p
	st := p.stores[j]
	fail := p.failNext[j] || p.failed[j]
	delete(p.failNext, j)
	if !fail {
		st.Append(ops)
	}
	w := p.w
	done := p.diskSynced()
	inc := e.inc
	w.sched.at(done, lbl("disk n%d %x token %d", uint64(p.id), j.Journal, uint64(t)), func() {
		if !p.up || p.inc != inc || p.stores[j] != st {
			return // the process died, or the journal retired meanwhile
		}
		if fail || p.failed[j] {
			// A failed sync: what reached the disk is unknown. Like the
			// Pebble store, the journal's store then refuses every later
			// write until it is reopened at quarantine's end (which drops
			// what was not synced), so no later batch lands without it.
			if !p.failed[j] {
				w.counts.DiskFaults++
			}
			p.failed[j] = true
			p.h.OnPersisted(t, &storage.IOError{Op: "sync", Outcome: storage.OutcomeUnknown, Err: errInjected})
			p.after()
			return
		}
		batch := st.PendingFirst()
		st.SyncFirst() // this batch only: later ones are still in flight
		w.audit.synced(p, j)
		w.audit.votesSynced(p, j, batch)
		if p.crashAfterSync {
			p.crashAfterSync = false
			w.counts.CrashesAfterSync++
			w.crash(p, "after sync, before send")
			return
		}
		p.h.OnPersisted(t, nil)
		p.after()
	})
}

func (e env) Reply(id host.CallID, r host.Response) {
	if e.live() && id&operatorBit != 0 {
		e.p.w.operatorReply(e.p, id, r)
		return
	}
	if e.live() {
		e.p.w.clients.reply(e.p, id, r)
	}
}

func (e env) BootStore(j journal.ID) (*storage.BootState, error) { return e.p.stores[j].Boot() }

// FormatStores formats each store, all or nothing as the contract asks:
// every marker is checked before any store is written.
func (e env) FormatStores(ms []storage.Marker) error {
	for _, m := range ms {
		if err := m.Validate(); err != nil {
			return err
		}
		if bs, err := e.p.stores[m.Journal].Boot(); err != nil || bs.Marker != nil {
			return fmt.Errorf("%w: journal %s", storage.ErrFormatted, m.Journal)
		}
	}
	for _, m := range ms {
		if err := e.p.stores[m.Journal].Format(m); err != nil {
			return err
		}
	}
	return nil
}

func (e env) ReopenStore(j journal.ID) error {
	e.p.stores[j].Reopen()
	e.p.w.audit.votesLost(e.p, j)
	delete(e.p.failed, j)
	return nil
}

func (e env) Rand() uint64 { return e.p.w.g.u64() }

// PersistRegistry writes a matchmaker batch; it is durable (synced) when
// the simulated disk finishes it, and a crash before then loses it.
func (e env) PersistRegistry(t host.Token, ops []matchmaker.WriteOp) {
	p := e.p
	w := p.w
	fail := p.failNext[registryJournal]
	delete(p.failNext, registryJournal)
	if fail {
		p.registry.FailNext()
	}
	err := p.registry.Append(ops)
	done := p.diskSynced()
	inc := e.inc
	w.sched.at(done, lbl("registry disk n%d token %d", uint64(p.id), uint64(t)), func() {
		if !p.up || p.inc != inc {
			return
		}
		if err == nil {
			p.registry.SyncFirst()
			w.audit.registrySynced(p)
		} else {
			w.counts.DiskFaults++
		}
		p.h.OnPersisted(t, err)
		p.after()
	})
}

// diskSynced is when a write handed to the disk now is synced. The disk
// group-commits as the runtime's storer does: a write that arrives while
// the disk is idle starts a sync of its own; one that arrives while a sync
// is under way waits for it and rides the next sync with every other
// write that arrives meanwhile, in order. A disk that synced each write
// alone made a cell of a few hundred journals take seconds per election
// wave, which no shipped process does.
func (p *proc) diskSynced() int64 {
	w := p.w
	now := w.sched.now
	switch {
	case now >= p.diskFree: // idle: a sync of its own, now
		p.groupStart, p.diskFree = now, now+w.g.between(w.shape.DiskMin, w.shape.DiskMax)
	case now < p.groupStart: // the next sync is still gathering: join it
	default: // a sync is under way: the next one starts when it ends
		p.groupStart = p.diskFree
		p.diskFree = p.groupStart + w.g.between(w.shape.DiskMin, w.shape.DiskMax)
	}
	return p.diskFree
}

// KeepMatchmakerSet keeps the newest chosen matchmaker set for the next
// boot (host.MatchmakerSetEnv), as the machine record would.
func (e env) KeepMatchmakerSet(s paxos.MatchmakerSet) {
	if e.p.mmset.Generation < s.Generation {
		e.p.mmset = s.Clone()
	}
	e.p.w.audit.chosenSet(s, "kept by a process")
}

// DeleteStore deletes a retired journal's store.
func (e env) DeleteStore(j journal.ID) error {
	p := e.p
	delete(p.stores, j)
	delete(p.joined, j)
	p.retired[j] = true
	return nil
}

// registryJournal keys an injected registry fault in failNext.
var registryJournal = journal.ID{Tenant: ^uint64(0), Journal: ^uint64(0)}

func short(j journal.ID) string { return fmt.Sprintf("j%x", j.Journal&0xfff) }

// specs is the configuration the operator starts the process with.
func (w *World) specs(p *proc, claim storage.Claim, edited bool) []host.JournalSpec {
	var out []host.JournalSpec
	for _, js := range w.shape.Journals {
		if !p.serves(js.ID) {
			continue
		}
		s := host.JournalSpec{ID: js.ID, Members: w.shape.Nodes, Quorum: w.shape.Quorum, Mode: js.Mode, Claim: claim,
			Matchmakers: w.shape.Matchmakers, MatchmakerSet: p.mmset, Replicas: w.replicaSet, Replica: p.replica(), Proxies: w.proxySet}
		if joined, ok := p.joined[js.ID]; ok {
			// Joined or created at run time: its store was formatted then.
			// The replica list is the operator's current one, which may
			// have changed since the join (replica.go); a created journal
			// has neither replicas nor proxies.
			s = joined
			s.Claim = storage.ClaimExistingMember
			if s.MatchmakerSet.Generation < p.mmset.Generation {
				s.MatchmakerSet = p.mmset
			}
			if js.CreatedAtMs == 0 {
				s.Replicas = w.replicaSet
				s.Proxies = w.proxySet
			}
		}
		if edited {
			// The operator edited the configuration: another writer mode.
			if s.Mode == journal.ModeSingle {
				s.Mode = journal.ModeMulti
			} else {
				s.Mode = journal.ModeSingle
			}
		}
		out = append(out, s)
	}
	return out
}

// start boots a process incarnation.
func (w *World) start(p *proc, edited bool) {
	claim := storage.ClaimExistingMember
	if p.boots == 0 {
		claim = storage.ClaimFirstBoot
	}
	p.boots++
	p.inc++
	p.up = true
	p.replicaSeq = w.replicaSeq // it boots with the operator's last list (specs)
	p.diskFree, p.groupStart = w.sched.now, w.sched.now
	// The new incarnation's host is being built: what it sends meanwhile
	// (a boot's first messages) is its own, not the old host's, whose
	// journals' statuses the audits must not judge it by.
	p.h = nil
	h, err := host.New(p.id, env{p: p, inc: p.inc}, w.shape.Tun, w.specs(p, claim, edited))
	if err != nil {
		w.audit.violation("sim: a process starts under a valid configuration", "node %d: %v", p.id, err)
		return
	}
	h.SetObserver(w.audit)
	p.h = h
	if p.registry != nil && !w.startMatchmaker(p, claim, edited) {
		// Refused: a wiped matchmaker for good, an edited one until the
		// operator restores its file.
		p.up = false
		p.inc++
		p.h = nil
		p.downForGood = p.wiped
		return
	}
	w.sched.note("start n%d boot=%d edited=%v", p.id, p.boots, edited)
	w.audit.booted(p, edited)
	w.audit.checkStores(p, "boot")
	if stopped, _ := h.Stopped(); stopped {
		p.up = false
		p.inc++
		p.downForGood = p.wiped
		return
	}
	w.tick(p, p.inc)
}

func (w *World) tick(p *proc, inc int) {
	tickUs := int64(w.shape.Tun.TickMs) * ms
	w.sched.after(tickUs, lbl("tick n%d", uint64(p.id)), func() {
		if !p.up || p.inc != inc {
			return
		}
		if w.sched.now < p.pausedUntil {
			w.tick(p, inc)
			return
		}
		p.h.OnTick()
		p.after()
		if p.up && p.inc == inc {
			w.tick(p, inc)
		}
	})
}

// after runs after every event a process handles. A process whose every
// journal is down or quarantined stops (fail-stop); its supervisor restarts
// it from its disk, unless its disk was wiped (the boot is refused for good).
func (p *proc) after() {
	if p.h == nil {
		return
	}
	p.w.audit.nodeChecks(p)
	p.w.audit.checkRepairs(p)
	if stopped, err := p.h.Stopped(); stopped && p.up {
		w := p.w
		w.sched.note("n%d stops: %v", p.id, err)
		w.audit.stopped(p, err)
		w.crash(p, "fail-stop")
		w.counts.FailStops++
		if !p.wiped {
			w.restartLater(p, w.g.between(50*ms, 500*ms))
		}
	}
}

// crash kills a process: unsynced writes are lost, in-flight events of the
// incarnation are dropped.
func (w *World) crash(p *proc, seam string) {
	if !p.up {
		return
	}
	// The incarnation's counters go with it: count them first (they feed
	// the gates; a leader that re-proposed and then crashed still did).
	w.collect(p)
	unsynced := false
	for _, j := range w.shape.Journals {
		if st := p.stores[j.ID]; st != nil {
			if st.Pending() > 0 {
				unsynced = true
			}
			st.Crash()
			w.audit.votesLost(p, j.ID)
		}
	}
	if p.registry != nil {
		if p.registry.Pending() > 0 {
			unsynced = true
		}
		p.registry.Crash()
	}
	if unsynced {
		w.counts.CrashesUnsynced++
	}
	w.counts.Crashes++
	clear(p.failed) // a restart reopens every store
	p.up = false
	p.inc++
	p.callInbox, p.callDrain = nil, false // calls read and not yet handled die with it
	p.h = nil
	w.sched.note("crash n%d (%s, unsynced=%v)", p.id, seam, unsynced)
}
