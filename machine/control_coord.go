package machine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/checkpoint"
	"github.com/parosdb/paros/client/election"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire"
	"github.com/parosdb/paros/wire/registrypb"
)

// The cell coordinator. Every machine serving the election journal (the
// founders, then whoever replaces them) campaigns on it;
// the winner takes the registry with SetLeader under its election uuid
// (the fence: a deposed coordinator's writes are refused by the journal
// itself, whatever it believes), folds it to its tail, and serves the
// control calls from a desk: one goroutine that turns requests into
// registry entries, appends them in batches through the checkpointer
// (which folds each entry and checkpoints the registry when its log
// outgrows its state), and answers each request with the outcome the fold
// gave it. The election's lease is only a liveness hint; the fence alone
// makes two coordinators harmless.

// DefaultTenant is registry.DefaultTenant.
const DefaultTenant = registry.DefaultTenant

// deskBatchMax bounds the requests one append carries.
const deskBatchMax = registry.BatchMax

// deskTick is how often the desk checks its leadership, checkpoints and
// finishes deletions left half done.
const deskTick = time.Second

// coordinator is the desk of the elected coordinator.
type coordinator struct {
	reqs chan *deskReq
	done chan struct{} // closed when the desk stops (deposed)
}

// deskReq is one control call waiting for the desk, and where its answer
// goes.
type deskReq struct {
	req   registry.Request
	reply chan *pb.ControlReply
}

// campaignWhileMember campaigns while this machine serves the election
// journal as one of its acceptors: the founders from the start, a machine
// a reconfiguration added to the journal once it serves it, and not a
// machine retired from it. So the cell keeps a coordinator when its
// founders are replaced one by one.
func (cp *controlPlane) campaignWhileMember(ctx context.Context) {
	var run *campaignRun
	defer func() { run.end() }()
	for ctx.Err() == nil {
		member := false
		if rt := cp.m.Runtime(); rt != nil {
			s, ok := rt.Spec(cp.election)
			member = ok && !s.Replica
		}
		switch {
		case member && run == nil:
			run = cp.startCampaign(ctx)
		case !member && run != nil:
			run.end()
			run = nil
		}
		sleep(ctx, controlPollEvery)
	}
}

// campaignRun is one running campaign loop.
type campaignRun struct {
	stop context.CancelFunc
	done chan struct{}
}

func (cp *controlPlane) startCampaign(ctx context.Context) *campaignRun {
	cctx, stop := context.WithCancel(ctx)
	r := &campaignRun{stop: stop, done: make(chan struct{})}
	go func() { defer close(r.done); cp.campaign(cctx) }()
	return r
}

// end stops the loop and waits for it (nil: nothing runs).
func (r *campaignRun) end() {
	if r == nil {
		return
	}
	r.stop()
	<-r.done
}

// campaign runs while this machine is a member of the election journal:
// campaign, coordinate while leading, campaign again when deposed.
func (cp *controlPlane) campaign(ctx context.Context) {
	for ctx.Err() == nil {
		uuid := client.RandomUUIDs() // the client's one draw of a fence
		e := election.New(cp.cl, cp.election, election.Interface(cp.m.cfg.Advertise), election.UUID(uuid))
		cp.mu.Lock()
		cp.elect = e
		cp.mu.Unlock()
		if _, err := e.Campaign(ctx); err != nil {
			sleep(ctx, controlPollEvery)
			continue
		}
		err := cp.lead(ctx, e, uuid)
		cp.m.log.Info("no longer the cell coordinator", "err", err)
		e.Close()
	}
}

// lead is one term as coordinator. It returns when deposed (the
// election moved on, or the registry refused a write) or ctx ends.
func (cp *controlPlane) lead(ctx context.Context, e *election.Election, uuid journal.LeaderUUID) error {
	w := cp.cl.Journal(cp.control).NewWriter(client.WithUUIDs(func() journal.LeaderUUID { return uuid }))
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		return fmt.Errorf("take the registry: %w", err)
	}
	st, err := cp.foldTo(ctx, w.NextSeq())
	if err != nil {
		return err
	}
	ck := checkpoint.NewCheckpointer(w, st, checkpoint.Trigger{LogBytesMin: 64 << 10, TicksMax: 60})
	if err := cp.bootstrap(ctx, ck); err != nil {
		return err
	}
	d := &coordinator{reqs: make(chan *deskReq, deskBatchMax), done: make(chan struct{})}
	cp.mu.Lock()
	cp.coord = d
	cp.mu.Unlock()
	defer func() {
		cp.mu.Lock()
		cp.coord = nil
		cp.mu.Unlock()
		close(d.done)
	}()
	cp.m.log.Info("the cell coordinator", "registry_at", w.NextSeq())
	return cp.desk(ctx, e, ck, d)
}

// foldTo folds the registry from its start up to (not including) next.
func (cp *controlPlane) foldTo(ctx context.Context, next journal.Seq) (*registrypb.State, error) {
	f := checkpoint.NewFolder(registrypb.New(), journal.FirstSeq)
	rd := cp.cl.Journal(cp.control).NewReader(journal.FirstSeq, client.WithTailWait(0))
	for rd.Cursor() < next {
		if _, err := foldNext(ctx, rd, f, nil, nil); err != nil {
			return nil, fmt.Errorf("fold the registry: %w", err)
		}
	}
	if f.Gapped() {
		return nil, fmt.Errorf("fold the registry: no checkpoint heals the gap below %d", f.Next())
	}
	return f.State(), nil
}

// bootstrap registers the founders and creates the default tenant on a
// registry that has neither (the first coordinator of the cell; a repeat
// after a crash finds them and writes nothing).
func (cp *controlPlane) bootstrap(ctx context.Context, ck *checkpoint.Checkpointer[*registrypb.State]) error {
	st := ck.State()
	var recs [][]byte
	known := map[uint64]bool{}
	for _, mc := range st.Machines() {
		known[mc.ID] = true
	}
	for _, mb := range cp.m.Record().Members {
		if !known[mb.NodeID] {
			recs = append(recs, registrypb.Encode(&pb.RegistryEntry{Entry: &pb.RegistryEntry_RegisterMachine{
				RegisterMachine: &pb.RegisterMachine{NodeId: mb.NodeID, Addr: mb.Addr}}}))
		}
	}
	if len(st.Machines()) == 0 {
		if _, ok := st.Tenant(DefaultTenant); !ok {
			recs = append(recs, registrypb.Encode(&pb.RegistryEntry{Entry: &pb.RegistryEntry_CreateTenant{
				CreateTenant: &pb.CreateTenant{Request: []byte("bootstrap:" + DefaultTenant), Name: DefaultTenant, TenantId: randomID()}}}))
		}
	}
	if len(recs) == 0 {
		return nil
	}
	_, err := ck.Append(ctx, recs...)
	return err
}

// desk serves requests until deposed.
func (cp *controlPlane) desk(ctx context.Context, e *election.Election, ck *checkpoint.Checkpointer[*registrypb.State], d *coordinator) error {
	tick := time.NewTicker(deskTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if !e.Status().Mine {
				return errors.New("the election moved on")
			}
			ck.Tick()
			if _, err := ck.MaybeCheckpoint(ctx); err != nil {
				return fmt.Errorf("checkpoint the registry: %w", err)
			}
			if err := cp.finishDeletions(ctx, ck); err != nil {
				return err
			}
		case r := <-d.reqs:
			batch := []*deskReq{r}
			for len(batch) < deskBatchMax {
				select {
				case r := <-d.reqs:
					batch = append(batch, r)
					continue
				default:
				}
				break
			}
			if err := cp.serveBatch(ctx, ck, batch); err != nil {
				return err
			}
		}
	}
}

// serveBatch writes the entries of a batch of requests in one append and
// answers each with its outcome (registry.Judge decides which are written
// and how the others are answered).
func (cp *controlPlane) serveBatch(ctx context.Context, ck *checkpoint.Checkpointer[*registrypb.State], batch []*deskReq) error {
	st := ck.State()
	reqs := make([]registry.Request, len(batch))
	for i, r := range batch {
		reqs[i] = r.req
	}
	entries, verdicts := registry.Judge(st.State, reqs)
	var written []*deskReq
	for i, v := range verdicts {
		r := batch[i]
		switch v.Kind {
		case registry.VerdictDenied:
			r.reply <- &pb.ControlReply{Refusal: refusalDenied}
		case registry.VerdictDecided:
			r.reply <- cp.answer(st.State, v.Outcome)
		case registry.VerdictRefused:
			r.reply <- &pb.ControlReply{Refusal: v.Refusal, RegistryAt: uint64(st.At())}
		case registry.VerdictWrite:
			written = append(written, r)
		}
	}
	if len(entries) == 0 {
		return nil
	}
	recs := registrypb.EncodeEntries(entries)
	if _, err := ck.Append(ctx, recs...); err != nil {
		for _, r := range written {
			r.reply <- &pb.ControlReply{Refusal: "unavailable", Detail: err.Error()}
		}
		return fmt.Errorf("write the registry: %w", err)
	}
	var deleted bool
	for _, r := range written {
		o, ok := st.Outcome(r.req.ID)
		if !ok {
			// A change the registry keeps no outcome of (a machine
			// registered or drained) is done once written.
			r.reply <- &pb.ControlReply{RegistryAt: uint64(st.At())}
			continue
		}
		if o.Kind == registry.OutcomeDeleted {
			deleted = true
		}
		defer func(r *deskReq, o registry.Outcome) { r.reply <- cp.answer(ck.State().State, o) }(r, o)
	}
	if deleted {
		// A delete is answered once its journal is gone: sealed, then
		// tombstoned. If that cannot finish now, the answer still says
		// deleted (the decision is made) and the desk finishes it later.
		if err := cp.finishDeletions(ctx, ck); err != nil {
			return err
		}
	}
	return nil
}

// answer words an outcome as a ControlReply.
func (cp *controlPlane) answer(st *registry.State, o registry.Outcome) *pb.ControlReply {
	r := &pb.ControlReply{RegistryAt: uint64(st.At()), Journal: wire.JournalIDToPB(o.Journal), TenantId: o.Journal.Tenant}
	switch o.Kind {
	case registry.OutcomeCreated:
	case registry.OutcomeDeleted:
		if o.Journal.Journal != 0 && !st.Gone(o.Journal) { // a journal, not a tenant
			// Decided, not finished: a delete is answered once its
			// journal is sealed and tombstoned. The caller asks again
			// with the same request id.
			r.Refusal, r.Detail = "unavailable", "the journal is being deleted: it is not sealed yet"
		}
	default:
		r.Refusal = o.Kind
	}
	if j, ok := st.JournalByID(o.Journal); ok {
		r.Placement = registrypb.PlacementToPB(j.Placement)
	}
	return r
}

// finishDeletions seals every journal the registry holds as deleting and
// writes the tombstones of the sealed ones. The seals are installed in
// parallel (each is a SetLeader on its own journal, sealParallel at a time)
// and the tombstones go out in batches of deskBatchMax, so a burst of
// deletes costs a few registry writes, not two per journal. A journal
// whose seal cannot be installed now (its members do not answer) stays
// deleting and is tried again at the next tick; only a refused registry
// write ends the term.
func (cp *controlPlane) finishDeletions(ctx context.Context, ck *checkpoint.Checkpointer[*registrypb.State]) error {
	del := ck.State().Deleting()
	sealed := make([]bool, len(del))
	var wg sync.WaitGroup
	sem := make(chan struct{}, sealParallel)
	for i, j := range del {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := cp.seal(ctx, j); err != nil {
				cp.m.log.Warn("sealing a deleted journal failed; trying again later", "journal", j.ID, "err", err)
				return
			}
			sealed[i] = true
		})
	}
	wg.Wait()
	var gone []journal.ID
	for i, j := range del {
		if sealed[i] {
			gone = append(gone, j.ID)
		}
	}
	for _, es := range registry.Tombstones(gone, deskBatchMax) {
		recs := registrypb.EncodeEntries(es)
		if _, err := ck.Append(ctx, recs...); err != nil {
			return fmt.Errorf("write %d tombstones: %w", len(recs), err)
		}
	}
	return nil
}

// sealParallel bounds the seals finishDeletions installs at once.
const sealParallel = 64

// sealTimeout bounds one attempt to seal a deleted journal.
const sealTimeout = 5 * time.Second

// seal seals a deleted single-writer journal: a SetLeader installing
// journal.Sealed, which nothing moves again and under which nothing is
// written, so the journal's own log orders the deletion after every append
// it ever accepted, whichever member answers a writer and whatever that
// member knows of the deletion. A multi-writer journal has no fence (its
// writes are unfenced); it stops when its members drop it at the tombstone.
func (cp *controlPlane) seal(ctx context.Context, j registry.Journal) error {
	if !j.NeedsSeal() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, sealTimeout)
	defer cancel()
	h := cp.cl.Journal(j.ID)
	var old journal.LeaderUUID // the fence in force, as last seen
	for {
		r, err := h.SetLeader(ctx, journal.SetLeaderRequest{New: journal.Sealed, Old: old})
		switch {
		case err == nil && r.Outcome.View.Leader == journal.Sealed:
			return nil // sealed now, or by an earlier attempt
		case err == nil && r.Outcome.Kind == journal.LeaderRefused:
			old = r.Outcome.View.Leader // compare-and-set against the fence in force
			continue
		case err == nil:
			return fmt.Errorf("seal: the journal answered %s", r.Outcome.Kind)
		case !errors.Is(err, client.ErrDenied) && !errors.Is(err, client.ErrAmbiguous) || ctx.Err() != nil:
			return err
		}
		// A member grants the seal once its own fold holds the journal
		// as deleting (ControlPeer): one a little behind the coordinator
		// refuses it for a moment. An ambiguous attempt is resent as is.
		sleep(ctx, sealRetryPause)
	}
}

// sealRetryPause is the pause between two seal attempts a member refused
// because its fold has not reached the deletion yet.
const sealRetryPause = 20 * time.Millisecond
