package sim

import (
	"fmt"

	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/wire/registrypb"
)

// The coordinators' desk. A coordinator turns control calls into registry
// entries with the shipped desk decisions (registry.Judge, BuildCreation,
// BuildTenant), against its own fold, which lags its appends in flight and
// the rival's: so a request decided already is answered from its outcome
// and not written, one not yet folded is written again and the fold reads
// it back, and a creation is placed on the least loaded up machines with
// the batch's pending placements counted.
//
// The calls are drawn over small pools of tenants and names, so names
// collide, tenants are deleted with journals in them, and placements name
// machines that are not registered or up; a fifth of them are retries of
// earlier calls (the same request id), as a client resends after an
// ambiguous answer, often through the other coordinator.

// deskBatchMax bounds the entries of one append, as the machine's desk.
const deskBatchMax = registry.BatchMax

// Pools the desk's ids are drawn from: small enough that the two
// coordinators' lagging folds draw colliding ids (the fold refuses the
// second: id_taken), large enough that a tenant never uses them all.
const (
	simTenantIDs  = 1024
	simJournalIDs = 1024
)

// regRecords are the registry entries a coordinator appends next: the
// bootstrap once per term, else the entries the desk writes for one to
// three calls.
func (cs *clients) regRecords(c *client) [][]byte {
	rc := c.reg
	var es []registry.Entry
	if !rc.booted {
		rc.booted = true
		es = cs.regBootstrap()
	} else {
		reqs := make([]registry.Request, 1+cs.w.g.intn(3))
		for i := range reqs {
			reqs[i] = cs.regRequest()
		}
		var verdicts []registry.Verdict
		es, verdicts = registry.Judge(rc.fold.State().State, reqs)
		for i, v := range verdicts {
			cs.judgeVerdict(c, reqs[i], v)
		}
	}
	return registrypb.EncodeEntries(es)
}

// regBootstrap registers the world's servers, creates the tenant the
// victim is registered under, and registers the victim.
func (cs *clients) regBootstrap() []registry.Entry {
	var es []registry.Entry
	for _, n := range cs.w.shape.Servers() {
		es = append(es, registry.RegisterMachine(uint64(n), fmt.Sprintf("n%d", n), ""))
	}
	es = append(es, registry.CreateTenant([]byte("boot:tenant"), regTenant, 0x7e0))
	if v := cs.w.shape.Victim; v >= 0 {
		id := cs.w.shape.Journals[v].ID
		servers := cs.w.shape.Servers()
		var ms []uint64
		for _, n := range servers[:min(3, len(servers))] {
			ms = append(ms, uint64(n))
		}
		es = append(es, registry.CreateJournal([]byte("boot:victim"), regTenant, "victim", id.Journal,
			registry.Placement{Members: ms, QuorumSystem: registry.QuorumMajority, WriterMode: registry.WriterSingle}))
	}
	return es
}

// judgeVerdict checks the desk's answer to one request against the board:
// a request answered from its outcome gets the outcome every fold gave it.
func (cs *clients) judgeVerdict(c *client, r registry.Request, v registry.Verdict) {
	w := cs.w
	switch v.Kind {
	case registry.VerdictDecided:
		w.audit.gate("registry: the desk answers a decided request from its outcome, writing nothing")
		if prev, seen := w.reg.board.outcomes[string(r.ID)]; seen && prev != v.Outcome {
			w.audit.violation("registry: one request folds to one outcome", "c%d's desk answers %q with %+v, the folds gave %+v",
				c.idx, r.ID, v.Outcome, prev)
		}
	case registry.VerdictRefused:
		w.audit.gate("registry: the desk refuses a call it cannot build, writing nothing")
	}
}

// regRequest draws one control call: a retry of an earlier one (the same
// request id and inputs), the victim's deletion once the chaos is well
// under way, or a fresh call.
func (cs *clients) regRequest() registry.Request {
	w, rw := cs.w, cs.w.reg
	g := w.g
	if len(rw.requests) > 0 && g.pct(20) {
		w.audit.gate("registry: a request is written again, as a retry after an ambiguous answer")
		return rw.requests[g.intn(len(rw.requests))]
	}
	var r registry.Request
	if w.shape.Victim >= 0 && w.sched.now > w.chaosEnd*4/10 && g.pct(30) {
		r = registry.Request{ID: []byte("delete:victim"), Build: built(registry.DeleteJournal([]byte("delete:victim"), regTenant, "victim"))}
	} else {
		r = cs.regCall()
	}
	rw.requests = append(rw.requests, r)
	return r
}

// regCall draws a fresh call over small pools of names, tenants and
// machines.
func (cs *clients) regCall() registry.Request {
	w, rw := cs.w, cs.w.reg
	g := w.g
	rw.nextReq++
	req := []byte(fmt.Sprintf("r%d", rw.nextReq))
	tenants := []string{regTenant, "t1", "t2", "none"}
	names := []string{"a", "b", "c", "", "bad/name"}
	servers := w.shape.Servers()
	// The desk's random draws, made when the call is built (a retry
	// built again may draw other ids, as the machine's desk would).
	drawTenant := func() uint64 { return 0x10 + uint64(g.intn(simTenantIDs)) }
	drawJournal := func() uint64 { return 0x400 + uint64(g.intn(simJournalIDs)) }
	switch k := g.intn(100); {
	case k < 10:
		name := tenants[1+g.intn(2)]
		return registry.Request{ID: req, Build: func(st *registry.State, _ registry.Pending) (registry.Entry, string, bool) {
			return registry.BuildTenant(st, req, name, drawTenant), "", true
		}}
	case k < 15:
		return registry.Request{ID: req, Build: built(registry.DeleteTenant(req, tenants[1+g.intn(2)]))}
	case k < 55:
		mode := registry.WriterSingle
		if g.pct(30) {
			mode = registry.WriterMulti
		}
		c := registry.Creation{Request: req, Tenant: tenants[g.intn(len(tenants))], Name: names[g.intn(len(names))],
			Placement: registry.Placement{QuorumSystem: registry.QuorumMajority, WriterMode: mode}}
		if g.pct(50) {
			// Members asked for by id, some not registered, some drained.
			c.Placement.Members = cs.regMembers(1 + g.intn(4))
		} else {
			c.Members = g.intn(5) // 0: the desk's default
		}
		return registry.Request{ID: req, Build: func(st *registry.State, pending registry.Pending) (registry.Entry, string, bool) {
			return registry.BuildCreation(st, pending, c, drawJournal)
		}}
	case k < 85:
		return registry.Request{ID: req, Build: built(registry.DeleteJournal(req, tenants[g.intn(len(tenants))], names[g.intn(len(names))]))}
	case k < 93:
		// A machine joining the pool (and sometimes one a placement
		// named before it is registered).
		n := uint64(60 + g.intn(3))
		return registry.Request{ID: req, Build: built(registry.RegisterMachine(n, fmt.Sprintf("n%d", n), fmt.Sprintf("zone-%d", g.intn(2))))}
	default:
		return registry.Request{ID: req, Build: built(registry.DrainMachine(uint64(servers[g.intn(len(servers))])))}
	}
}

// built is a Build that always makes entry e.
func built(e registry.Entry) func(*registry.State, registry.Pending) (registry.Entry, string, bool) {
	return func(*registry.State, registry.Pending) (registry.Entry, string, bool) { return e, "", true }
}

// regMembers draws n members over the world's servers and the machines
// that may join (some not registered, some drained, some repeated).
func (cs *clients) regMembers(n int) []uint64 {
	g := cs.w.g
	pool := []uint64{60, 61, 62}
	for _, s := range cs.w.shape.Servers() {
		pool = append(pool, uint64(s))
	}
	var ms []uint64
	for range n {
		ms = append(ms, pool[g.intn(len(pool))])
	}
	return ms
}
