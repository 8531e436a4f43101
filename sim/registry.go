package sim

import (
	"github.com/parosdb/paros/client/checkpoint"
	cl "github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire/registrypb"
)

// The control plane (drawn per seed: Shape.Control). One single-writer
// journal of the world is the cell's registry. Its two owners are rival
// coordinators: each claims it (the other's claim deposes it, as a new
// election winner's SetLeader deposes the old coordinator), folds it to
// its tail with the shipped checkpoint.Folder over the shipped registry
// fold, writes registry requests through the client Pipeline (create and
// delete tenants and journals, register and drain machines, and retries of
// earlier requests, as a client resends after an ambiguous answer, often
// through the other coordinator), checkpoints the registry as a run and
// truncates behind it, and finishes deletions. Its readers are the
// machines folding the registry; one of them starts late, from nothing,
// as a machine joining from an empty disk, and must restore from a
// checkpoint the truncations left.
//
// One data journal of the world (Shape.Victim) is registered at the
// bootstrap and deleted during the chaos: the coordinator seals it (a
// SetLeader installing journal.Sealed, the call the cell coordinator
// makes) and only then writes its tombstone. Its own owners keep trying
// to take it back, as a writer that missed the deletion would.
//
// The oracles (registry_oracle.go) judge every fold: the registry folds
// alike on every folder, a checkpoint equals the prefix it replaces, one
// request folds to one outcome, a journal is tombstoned only once sealed,
// and no append to it is acknowledged at or after its seal.

// regClient is a coordinator's or a folder's part in the control plane.
type regClient struct {
	fold *checkpoint.Folder[*registrypb.State]
	// late: a folder that starts from nothing part way through the run.
	late bool
	// A coordinator's checkpoint run in flight: its position and the
	// appends of it not completed yet.
	runAt   journal.Seq
	runLeft map[cl.AppendID]bool
	runFail bool
	// booted: this coordinator wrote the bootstrap entries in its term.
	booted bool
	// sealOld is the fence last seen in force on the victim.
	sealOld journal.LeaderUUID
	// member: a folder's member machine applying the registry to itself
	// (registry_member.go); nil for a coordinator.
	member *regMember
}

// regWorld is what the control plane shares across clients: the requests
// written so far (for retries) and the board the oracles keep.
type regWorld struct {
	requests []registry.Request
	nextReq  int
	board    regBoard
}

// opSeal is the coordinator's seal of a deleted journal; opUnseal a
// deleted journal's writer trying to take it back by compare-and-set.
const (
	opSeal op = iota + 32
	opUnseal
)

// regTenant is the tenant the victim is registered under.
const regTenant = "sim"

// newRegClient sets up a control-journal client: every one folds.
func newRegClient(late bool) *regClient {
	return &regClient{fold: checkpoint.NewFolder(registrypb.New(), journal.FirstSeq), late: late}
}

// coordStep is a coordinator's step once it holds the registry.
func (cs *clients) coordStep(c *client) {
	g, rc := cs.w.g, c.reg
	if rc.runAt != 0 && len(rc.runLeft) == 0 {
		cs.finishRun(c)
		return
	}
	switch r := g.intn(100); {
	case r < 40:
		// Fold on: the coordinator reads its registry back.
		cs.send(c, opRead, host.Call{Kind: host.CallRead, Read: c.rd.Request(uint32(1+g.intn(16)), 0)}, cs.readServer(c))
	case r < 70 && rc.runAt == 0:
		cs.appendPiped(c, false)
	case r < 80 && rc.runAt == 0:
		cs.checkpointRun(c)
	case r < 92:
		cs.finishDeletions(c)
	default:
		cs.schedule(c, g.between(10*ms, 60*ms))
	}
}

// checkpointRun writes the coordinator's registry as a run at its next
// position, once its fold has reached that position and nothing else of
// its own is in flight: the run's state is then the fold of every entry
// below it. Small chunks make runs of several records.
func (cs *clients) checkpointRun(c *client) {
	rc, g := c.reg, cs.w.g
	if len(c.appends) > 0 || rc.fold.Next() != c.p.NextSeq() || rc.fold.Gapped() || rc.fold.InRun() {
		cs.schedule(c, g.between(5*ms, 30*ms))
		return
	}
	at := c.p.NextSeq()
	run := checkpoint.Plan(rc.fold.State().Checkpoint(), at, 64+g.intn(1024))
	rc.runAt, rc.runLeft, rc.runFail = at, map[cl.AppendID]bool{}, false
	for _, b := range checkpoint.Batches(run) {
		id, _, err := c.p.Append(b)
		if err != nil {
			rc.runFail = true // a run without its End: every folder ignores it
			break
		}
		c.appends[id] = b
		rc.runLeft[id] = true
	}
	cs.pump(c)
	cs.schedule(c, g.between(0, 15*ms))
}

// runDone notes one of the run's appends completed (drainPipe).
func (rc *regClient) runDone(id cl.AppendID, err error) {
	if rc == nil || !rc.runLeft[id] {
		return
	}
	delete(rc.runLeft, id)
	if err != nil {
		rc.runFail = true
	}
}

// finishRun truncates behind a run whose every record landed (its End
// is the commit point; the truncation makes it the registry's start).
func (cs *clients) finishRun(c *client) {
	rc := c.reg
	at, failed := rc.runAt, rc.runFail
	rc.runAt, rc.runLeft = 0, nil
	if failed {
		cs.schedule(c, cs.w.g.between(0, 15*ms))
		return
	}
	cs.w.audit.gate("registry: a coordinator checkpoints the registry")
	req, err := c.p.Truncate(at)
	if err != nil {
		cs.schedule(c, cs.w.g.between(5*ms, 30*ms))
		return
	}
	cs.send(c, opTruncate, host.Call{Kind: host.CallTruncate, Truncate: req}, cs.server(c))
}

// finishDeletions finishes what the coordinator's fold holds as
// deleting, as the desk does: a journal that needs a seal is sealed first
// and tombstoned once the seal is seen in force; one that needs none (a
// multi-writer journal) is tombstoned at once. The victim is the only
// deleted journal with stores in this world: the others live only in the
// registry, so there is nothing to seal and their seal is taken as done.
func (cs *clients) finishDeletions(c *client) {
	w, rc := cs.w, c.reg
	var gone []journal.ID
	for _, j := range rc.fold.State().Deleting() {
		if v := w.shape.Victim; v >= 0 && j.ID == w.shape.Journals[v].ID && j.NeedsSeal() {
			if _, sealed := w.reg.board.sealed[j.ID]; !sealed {
				cs.send(c, opSeal, host.Call{Kind: host.CallSetLeader, SetLeader: journal.SetLeaderRequest{
					Journal: j.ID, New: journal.Sealed, Old: rc.sealOld}}, cs.sealServer(c, j.ID))
				return
			}
		}
		gone = append(gone, j.ID)
	}
	if len(gone) == 0 {
		cs.schedule(c, w.g.between(5*ms, 30*ms))
		return
	}
	for _, es := range registry.Tombstones(gone, deskBatchMax) {
		recs := registrypb.EncodeEntries(es)
		if id, _, err := c.p.Append(recs); err == nil {
			c.appends[id] = recs
		}
	}
	cs.pump(c)
	cs.schedule(c, w.g.between(0, 15*ms))
}

// sealServer is where a seal goes: the leader of the sealed journal a
// reply named last, else any server.
func (cs *clients) sealServer(c *client, j journal.ID) paxos.NodeID {
	for _, o := range cs.all {
		if o.j.ID == j && o.hint != 0 && !cs.w.g.pct(20) {
			return o.hint
		}
	}
	nodes := cs.w.shape.Servers()
	return nodes[cs.w.g.intn(len(nodes))]
}

// finishSeal judges the reply to a seal: sealed when the journal names
// the seal in force (this attempt won, or an earlier one did); another
// fence in force is compared-and-set against next time.
func (cs *clients) finishSeal(f *inflight, r host.Response, timedOut bool) {
	w, rc := cs.w, f.c.reg
	if timedOut || r.Reply.Ambiguous() || r.Reply.Outcome.Kind == journal.OutcomeInvalid {
		return // resent at a later step, identical unless the fence moved
	}
	out := r.Reply.Outcome
	switch {
	case out.View.Leader == journal.Sealed:
		w.reg.board.sealedAt(w, f.call.SetLeader.Journal, out.View.NextSeq)
	case out.Kind == journal.LeaderRefused:
		rc.sealOld = out.View.Leader
	}
}

// finishUnseal judges a deleted journal's writer trying to move the seal.
func (cs *clients) finishUnseal(f *inflight, r host.Response, timedOut bool) {
	w := cs.w
	if timedOut || r.Reply.Ambiguous() || r.Reply.Outcome.Kind == journal.OutcomeInvalid {
		return
	}
	switch r.Reply.Outcome.Kind {
	case journal.LeaderSet:
		w.audit.violation("journal: nothing moves the seal", "c%d moved the seal of %s to %s",
			f.c.idx, short(f.call.SetLeader.Journal), f.call.SetLeader.New)
	case journal.LeaderRefused:
		w.audit.gate("journal: a claim on a sealed journal is refused")
	}
}

// deletedStep is the step of a writer whose journal was sealed: now and
// then it tries to take the journal back from the seal.
func (cs *clients) deletedStep(c *client) {
	g := cs.w.g
	if g.pct(70) {
		cs.schedule(c, g.between(50*ms, 200*ms))
		return
	}
	cs.send(c, opUnseal, host.Call{Kind: host.CallSetLeader, SetLeader: journal.SetLeaderRequest{
		Journal: c.j.ID, New: cs.freshUUID(), Old: journal.Sealed}}, cs.server(c))
}
