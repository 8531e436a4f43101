package machine

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/checkpoint"
	"github.com/parosdb/paros/client/election"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/wire/registrypb"
)

// The machine's part in the cell's control plane. A cell formed with one
// has two journals of its own, served at first by every founding member
// and moved like any journal by reconfiguration: the registry (the control
// journal: machines, tenants, journals by name and their placements,
// folded by core/registry) and the election journal, where the machines
// serving it elect the cell coordinator (client/election). Every acceptor
// machine runs a follower that folds the registry and applies to itself
// the journals placed on it and the ones deleted; every machine that
// serves the election journal also campaigns, and the winner serves the
// control calls
// (control_coord.go). Both speak to the cell through the public client
// with the machine's own certificate, which the server grants the control
// journals and nothing else (ControlPeer).
//
// Static stability: a machine serves the journals its record lists
// whether or not the control plane answers; only creating, deleting and
// placing wait for it.

// controlPlane is one machine's control-plane loops and what they know.
type controlPlane struct {
	m                 *Machine
	control, election journal.ID
	// cl is the control plane's client, set once dialed (before any loop
	// that uses it starts); nil until then.
	cl     *client.Client
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu sync.Mutex
	// folder is the follower's fold of the registry, nil until it starts.
	// Only the follower folds, and only under mu; it reads the state
	// without mu (nothing else writes it).
	folder *checkpoint.Folder[*registrypb.State]
	// fold is a copy of the folder's state for readers that keep it
	// (snapshot), never mutated once handed out; foldStale says the
	// folder moved since it was taken. It is taken when asked for, not
	// per page: a copy is as large as the registry, and a busy registry
	// folds a page every few milliseconds.
	fold      *registry.State
	foldStale bool
	// caughtUp: fold has reached the registry's tail at least once since
	// this machine started. Before that, a name missing from it may exist
	// (a restarted machine folds from the start), so it answers no query.
	caughtUp bool
	// coord is the coordinator's desk while this machine leads; nil else.
	coord *coordinator
	elect *election.Election
}

// ControlPlaneUserAgent is the gRPC user agent of the calls a machine's
// control plane makes (its follower, campaign and coordinator), so that
// the cell's own traffic can be told from its clients'.
const ControlPlaneUserAgent = "paros-control-plane"

// followApplyEvery bounds the registry positions a follower folds without
// applying them while it catches up: the journals placed on it wait at
// most that many entries to be served.
const followApplyEvery = 4096

// controlPollEvery is how long a loop waits before trying again after the
// cell did not answer (a follower, a campaign, a deletion to finish).
const controlPollEvery = 200 * time.Millisecond

// ControlPeer reports whether a peer machine may make a journal call
// (server.Security.ControlPeer): every acceptor machine of the cell
// (founders and admitted machines) reads and writes the control plane's
// journals (the members of the election journal campaign, and the
// coordinator among them writes the registry; a founder replaced by an
// admitted machine hands it that part), and may seal (a SetLeader
// installing journal.Sealed, which writes no record) a journal this
// machine's fold of the registry holds as being deleted: the seal orders
// the deletion after every append the journal ever accepted. Nothing
// else, and nothing to a replica or proxy machine, or to a machine the
// cell never admitted.
func (m *Machine) ControlPeer(c server.PeerCall) bool {
	r := m.Record()
	if r.Control == nil {
		return false
	}
	is := func(ms []machinerecord.Member) bool {
		return slices.ContainsFunc(ms, func(x machinerecord.Member) bool { return x.NodeID == c.Node })
	}
	acceptor := is(r.Members) || is(r.Admitted)
	if c.Journal != r.Control.ID() && c.Journal != r.Election.ID() {
		return c.Seal && c.Op == security.OpWrite && acceptor && m.deleting(c.Journal)
	}
	return acceptor && (c.Op == security.OpRead || c.Op == security.OpWrite)
}

// deleting reports whether this machine's fold of the registry holds
// journal id as being deleted.
func (m *Machine) deleting(id journal.ID) bool {
	cp := m.controlPlane()
	if cp == nil {
		return false
	}
	deleting := false
	cp.view(func(st *registry.State) {
		j, ok := st.JournalByID(id)
		deleting = ok && j.Standing == registry.StandingDeleting
	})
	return deleting
}

// startControl starts the control plane of a machine whose cell has one
// and that is an acceptor machine (a replica or proxy takes no part).
func (m *Machine) startControl() {
	r := m.rec
	if r.Control == nil || r.Replica() || r.Proxy() {
		return
	}
	// Every acceptor machine the record knows, not only the founders: a
	// cell whose founders were replaced reaches its control plane through
	// the machines that replaced them (the client learns the rest).
	var servers []string
	for _, mb := range append(slices.Clone(r.Members), r.Admitted...) {
		servers = append(servers, mb.Addr)
	}
	opts := []client.Option{client.WithDialOptions(grpc.WithUserAgent(ControlPlaneUserAgent))}
	if m.cfg.TLS != nil {
		opts = append(opts, client.WithTLS(m.cfg.TLS.PeerConfig(0)))
	} else {
		opts = append(opts, client.WithInsecure())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cp := &controlPlane{m: m, control: r.Control.ID(), election: r.Election.ID(), cancel: cancel,
		fold: registry.New()}
	m.cp = cp
	cp.done.Add(1)
	go func() {
		defer cp.done.Done()
		// Dial waits for a machine of the cell to answer; the machine
		// serves its journals meanwhile (static stability), so it never
		// waits for it. A machine restarted with every other one down
		// dials once they are back.
		cl, err := client.Dial(ctx, servers, opts...)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error("the control plane cannot dial the cell", "err", err)
			}
			return
		}
		cp.mu.Lock()
		cp.cl = cl
		cp.mu.Unlock()
		cp.done.Add(1)
		go func() { defer cp.done.Done(); cp.campaignWhileMember(ctx) }()
		cp.follow(ctx)
	}()
}

// stop ends the loops and waits for them.
func (cp *controlPlane) stop() {
	cp.cancel()
	cp.done.Wait()
	if cp.cl != nil {
		cp.cl.Close()
	}
}

// snapshot is the follower's fold of the registry (never mutated: the
// caller may keep it) and the desk while this machine coordinates.
func (cp *controlPlane) snapshot() (*registry.State, *coordinator) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.foldStale {
		cp.fold, cp.foldStale = cp.folder.State().Clone().State, false
	}
	return cp.fold, cp.coord
}

// view runs fn on the follower's fold of the registry as it stands, under
// the lock the follower folds under: a question about one journal costs
// no copy of the registry. fn must not keep st.
func (cp *controlPlane) view(fn func(st *registry.State)) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.folder == nil {
		fn(cp.fold)
		return
	}
	fn(cp.folder.State().State)
}

// ready reports whether the fold has caught up with the registry since
// this machine started (caughtUp).
func (cp *controlPlane) ready() bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.caughtUp
}

// coordinatorAddr is where the elected coordinator is reached ("" while
// none is known).
func (cp *controlPlane) coordinatorAddr() string {
	cp.mu.Lock()
	e := cp.elect
	cp.mu.Unlock()
	if e == nil {
		return ""
	}
	st := e.Status()
	if !st.Leader.IsSet() {
		return ""
	}
	return st.Interface
}

// follow folds the registry from its start, forever, and applies each
// page to this machine (applyPlacements) before reading the next.
func (cp *controlPlane) follow(ctx context.Context) {
	f := checkpoint.NewFolder(registrypb.New(), journal.FirstSeq)
	cp.mu.Lock()
	cp.folder, cp.foldStale = f, true
	cp.mu.Unlock()
	rd := cp.cl.Journal(cp.control).NewReader(journal.FirstSeq, client.WithTailWait(time.Second))
	var applied journal.Seq // f.Next() at the last apply
	for ctx.Err() == nil {
		n, err := foldNext(ctx, rd, f, &cp.mu, &cp.foldStale)
		if err != nil {
			sleep(ctx, controlPollEvery)
			continue
		}
		atTail := !f.Gapped() && rd.Cursor() >= rd.Tail()
		if n == 0 {
			if atTail {
				cp.mu.Lock()
				cp.caughtUp = true
				cp.mu.Unlock()
			}
			continue
		}
		if !atTail && f.Next()-applied < followApplyEvery {
			// More of the registry is already there: fold it first and
			// apply once (group commit). Applying costs up to two
			// machine-record writes whatever it carries, so a follower
			// that fell behind catches up in few applies instead of one
			// per page.
			continue
		}
		applied = f.Next()
		st := f.State().State // only this goroutine folds: it reads without the lock
		cp.mu.Lock()
		cp.caughtUp = cp.caughtUp || atTail
		cp.mu.Unlock()
		// A folder past a gap knows only part of the registry until the
		// next checkpoint heals it: nothing is applied from it.
		for !f.Gapped() && ctx.Err() == nil {
			err := cp.m.applyPlacements(ctx, st, f.Next())
			if err == nil {
				break
			}
			cp.m.log.Error("applying the registry to this machine failed; retrying", "err", err)
			sleep(ctx, controlPollEvery)
		}
	}
}

// foldNext reads the registry's next page into f: a gap moves f past it
// (a checkpoint after it heals the fold), records are folded. It returns
// how many records it folded and the reader's error (a gap is none). When
// mu is set, f is shared: it is changed only under mu, and *stale set.
func foldNext(ctx context.Context, rd *client.Reader, f *checkpoint.Folder[*registrypb.State], mu *sync.Mutex, stale *bool) (int, error) {
	recs, err := rd.Next(ctx)
	var gap *client.GapError
	if err != nil && !errors.As(err, &gap) {
		return 0, err
	}
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
		*stale = true
	}
	if gap != nil {
		f.Jump(gap.To)
		return 0, nil
	}
	for _, r := range recs {
		f.Fold(r.Seq, r.Data)
	}
	return len(recs), nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
