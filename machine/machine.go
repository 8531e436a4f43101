// Package machine is one paros machine's identity and its part in forming
// a cell (docs/design/service.md, "Forming a cell").
//
// A machine starts in a data dir. On the first start in an empty dir it
// takes its node id from its certificate (Config.TLS; a random one in
// insecure mode) and writes its machine record; then it waits,
// serving Identify and acting as an acceptor of the cell-init decree. The
// decree is single-decree Paxos on the cell plan (cell id, members, journal
// ids) over the founding members: CellInit, sent to any member, runs Phase 1
// at every member (all must answer), adopts a plan some member already
// voted for or draws a new one, and runs Phase 2; a majority of votes
// chooses it. Voting for the plan formats the plan's journal stores and then
// records the vote in the machine record (the commit point); from then on
// the machine serves the cell, and every later start is an existing member.
//
// A start never formats a store outside formation: a store missing under a
// kept identity is refused as amnesia, a store formatted under another
// configuration is refused, and a data dir holding a store but no record
// (a lost identity) is refused, and so is a record whose node id is not the
// one the machine's certificate names (ErrCertificateMismatch).
//
// With credentials (Config.TLS) a machine serves TLS (ServerOptions), dials
// its peers over mutual TLS expecting each peer's node id, and dials the
// founding members during cell init over mutual TLS expecting any node of
// its cell; without them (the explicit --insecure mode) everything is
// plaintext and unauthenticated.
package machine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/core/registry"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/server"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
	"github.com/parosdb/paros/storage/pebblestore"
)

// Errors a start can end with. Refusals mean "do not restart" (exit 78).
var (
	ErrLostIdentity = errors.New("paros/machine: the data dir holds a store but no machine record (lost identity)")
	// ErrCertificateMismatch: the machine record names another node than
	// the machine's certificate (the certificate of another machine, or a
	// data dir first started insecure). Serving would let one node speak
	// under two identities; issue the certificate for the record's node id
	// (paros cert node --node-id) or use the right one.
	ErrCertificateMismatch = errors.New("paros/machine: the machine record names another node than the certificate")
)

// Config starts a machine.
type Config struct {
	DataDir   string
	Advertise string // the address peers and clients use
	Tunables  host.Tunables
	Logger    *slog.Logger
	Metrics   *runtime.Metrics
	// TLS is the machine's credentials (security.LoadNode): the node id of
	// a new machine, the TLS it serves, the mutual TLS it dials peers with.
	// Nil is the explicit insecure mode: a random node id, plaintext, no
	// authentication.
	TLS *security.Node
	// Role is what the machine is started as (role.go): a node (the zero
	// value), a replica or a proxy (proxy.go). A machine of a cell must be
	// started as the role its record gives it (ErrRoleMismatch).
	Role Role
}

// Machine is one running paros machine.
type Machine struct {
	cfg  Config
	log  *slog.Logger
	fs   vfs.FS
	mu   sync.Mutex
	rec  machinerecord.Record
	db   *pebblestore.DB
	rt   *runtime.Runtime
	done chan struct{} // closed when the runtime stops on its own
	err  error
	// cp is the machine's part in the control plane (control.go); nil
	// on a cell without one, and before the cell forms.
	cp *controlPlane
	// proposing holds a token while a CellInit runs here: one proposer
	// per machine at a time, so a ballot (whose node is this machine)
	// names one proposer (CellInit, PrepareCell).
	proposing chan struct{}
	// follower is owned by the control plane's follower (applyPlacements,
	// its only caller): what this start of the machine has applied of the
	// registry and not yet recorded.
	follower registry.Follower
}

const storeDir = "store"

// Open starts a machine from its data dir (taking its identity from the
// certificate, or minting one in insecure mode, in an empty dir) and, if
// it already belongs to a cell, starts serving it. A record whose node id
// is not the certificate's is refused with ErrCertificateMismatch.
func Open(cfg Config) (*Machine, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Machine{cfg: cfg, fs: vfs.Default, done: make(chan struct{}), proposing: make(chan struct{}, 1)}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	rec, err := machinerecord.Load(m.fs, cfg.DataDir)
	switch {
	case errors.Is(err, machinerecord.ErrMissing):
		if entries, _ := os.ReadDir(filepath.Join(cfg.DataDir, storeDir)); len(entries) > 0 {
			return nil, ErrLostIdentity
		}
		rec = machinerecord.Record{NodeID: randomID()}
		if cfg.TLS != nil {
			rec.NodeID = cfg.TLS.NodeID
		}
		if err := machinerecord.Store(m.fs, cfg.DataDir, rec); err != nil {
			return nil, fmt.Errorf("paros/machine: write the machine record: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("paros/machine: %w", err)
	}
	if cfg.TLS != nil && rec.NodeID != cfg.TLS.NodeID {
		return nil, fmt.Errorf("%w: the record in %s is node %016x, the certificate names node %016x",
			ErrCertificateMismatch, cfg.DataDir, rec.NodeID, cfg.TLS.NodeID)
	}
	if rec.CellID != 0 && recordRole(rec) != cfg.Role {
		return nil, fmt.Errorf("%w: the record in %s makes node %016x a %s of cell %016x; it was started as a %s",
			ErrRoleMismatch, cfg.DataDir, rec.NodeID, recordRole(rec), rec.CellID, cfg.Role)
	}
	m.rec = rec
	m.log = cfg.Logger.With("node", rec.NodeID, "role", cfg.Role.String())
	if cfg.Metrics != nil {
		cfg.Metrics.SetRole(cfg.Role.String())
	}
	if cfg.Role != RoleProxy {
		// A proxy keeps no store: its data dir holds the record alone.
		db, err := pebblestore.Open(filepath.Join(cfg.DataDir, storeDir), &pebblestore.Options{Logger: pebbleLog{m.log}})
		if err != nil {
			return nil, fmt.Errorf("paros/machine: open the store: %w", err)
		}
		m.db = db
	}
	if rec.CellID != 0 {
		if err := m.upgradeRegistry(); err != nil {
			m.closeDB()
			return nil, err
		}
		if err := m.serve(storage.ClaimExistingMember); err != nil {
			m.closeDB()
			return nil, err
		}
	} else {
		m.log.Info("machine idle: waiting for a cell", "data", cfg.DataDir)
	}
	return m, nil
}

// pebbleLog routes Pebble's log lines to slog: its chatter at debug level.
type pebbleLog struct{ l *slog.Logger }

func (p pebbleLog) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "from", "pebble")
}
func (p pebbleLog) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "from", "pebble")
}
func (p pebbleLog) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "from", "pebble")
}

func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		if v := binary.LittleEndian.Uint64(b[:]) >> 1; v != 0 {
			return v
		}
	}
}

// NodeID is this machine's id.
func (m *Machine) NodeID() uint64 { return m.rec.NodeID }

// Record returns a copy of the machine record.
func (m *Machine) Record() machinerecord.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rec
}

// PebbleDB is the machine's store (nil on a proxy machine, which keeps
// none). It is for test hooks and audits in this process (paros serve's
// parostesthooks endpoint): the runtime owns every journal in it, so a
// caller must not format, write or delete through it.
func (m *Machine) PebbleDB() *pebblestore.DB { return m.db }

// closeDB closes the store, if the machine keeps one.
func (m *Machine) closeDB() error {
	if m.db == nil {
		return nil
	}
	return m.db.Close()
}

// Runtime is the running process (nil before the cell forms).
func (m *Machine) Runtime() *runtime.Runtime {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rt
}

// specs is every journal this machine serves. A founder serves the plan's
// journals: single-writer, majority quorums over the founding members, with
// the cell's matchmakers; every machine serves the journals it joined, as
// the joiner it was formatted as. Retired journals are served by nobody
// here. Every spec names the plan's replicas and proxies; a replica machine
// serves every journal of the plan as a replica (replicaSpecs), a proxy
// machine none.
func (m *Machine) specs(claim storage.Claim) []host.JournalSpec {
	switch {
	case m.rec.Replica():
		return replicaSpecs(m.rec, claim)
	case m.rec.Proxy():
		return nil
	}
	reps, proxies := replicaIDs(m.rec), proxyIDs(m.rec)
	var members []paxos.NodeID
	for _, mb := range m.rec.Members {
		members = append(members, paxos.NodeID(mb.NodeID))
	}
	slices.Sort(members)
	mms := nodeIDs(m.rec.Matchmakers)
	retired := func(id journal.ID) bool {
		return slices.ContainsFunc(m.rec.Retired, func(r machinerecord.JournalID) bool { return r.ID() == id })
	}
	var out []host.JournalSpec
	if m.rec.Founder() {
		for _, j := range m.rec.Journals {
			if !retired(j.ID()) {
				out = append(out, host.JournalSpec{ID: j.ID(), Members: members, Quorum: quorum.Spec{Kind: quorum.KindMajority},
					Mode: journal.ModeSingle, Claim: claim, Matchmakers: mms, MatchmakerSet: matchmakerSetOf(m.rec),
					Replicas: reps, Proxies: proxies})
			}
		}
		// The control plane's journals (control.go): the registry is
		// single-writer (fenced by the elected coordinator), the election
		// journal multi-writer (every candidate appends to it).
		if m.rec.Control != nil {
			for _, c := range []struct {
				id   journal.ID
				mode journal.WriterMode
			}{{m.rec.Control.ID(), journal.ModeSingle}, {m.rec.Election.ID(), journal.ModeMulti}} {
				if !retired(c.id) {
					out = append(out, host.JournalSpec{ID: c.id, Members: members, Quorum: quorum.Spec{Kind: quorum.KindMajority},
						Mode: c.mode, Claim: claim, Matchmakers: mms, MatchmakerSet: matchmakerSetOf(m.rec),
						Replicas: reps, Proxies: proxies})
				}
			}
		}
	}
	for _, j := range m.rec.Joined {
		if !retired(j.ID()) {
			out = append(out, m.joinedSpec(j, claim))
		}
	}
	return out
}

// joinedSpec is a joined journal's spec. A join whose format never
// completed (the record says so) boots as a first boot: no store was
// formatted, so nothing was promised; a store already formatted under
// exactly this configuration is adopted.
func (m *Machine) joinedSpec(j machinerecord.JoinedJournal, claim storage.Claim) host.JournalSpec {
	s := host.JournalSpec{ID: j.ID(), Members: nodeIDs(j.Members),
		Quorum: quorum.Spec{Kind: quorum.Kind(j.Kind), Q1: j.Q1, Q2: j.Q2, Rows: j.Rows, Cols: j.Cols},
		Mode:   journal.WriterMode(j.Mode), Claim: claim, Matchmakers: nodeIDs(m.rec.Matchmakers), Joiner: !j.Created,
		MatchmakerSet: matchmakerSetOf(m.rec), Replicas: replicaIDs(m.rec), Proxies: proxyIDs(m.rec)}
	if !j.Formatted {
		s.Claim = storage.ClaimFirstBoot
		if bs, err := m.db.Journal(s.ID).Boot(); err == nil && bs.Marker != nil {
			s.Claim = storage.ClaimExistingMember
		}
	}
	return s
}

func nodeIDs(ids []uint64) []paxos.NodeID {
	out := make([]paxos.NodeID, len(ids))
	for i, id := range ids {
		out[i] = paxos.NodeID(id)
	}
	slices.Sort(out)
	return out
}

// peers is every machine of the cell (founders, admitted, replicas and
// proxies) by address: a leader pushes to the replicas and delegates to the
// proxies, a replica asks the acceptors, a proxy fans out to them.
func (m *Machine) peers() map[paxos.NodeID]string {
	peers := map[paxos.NodeID]string{}
	for _, mb := range cellMachines(m.rec) {
		peers[paxos.NodeID(mb.NodeID)] = mb.Addr
	}
	return peers
}

// serve starts the runtime over the plan.
func (m *Machine) serve(claim storage.Claim) error {
	rt, err := runtime.Start(runtime.Config{NodeID: paxos.NodeID(m.rec.NodeID), Peers: m.peers(), Journals: m.specs(claim),
		Tunables: m.cfg.Tunables, DB: m.db, Logger: m.log, Metrics: m.cfg.Metrics, TLS: m.cfg.TLS,
		Matchmakers: nodeIDs(m.rec.Matchmakers), MatchmakerRole: runsMatchmaker(m.rec), RegistryClaim: storage.ClaimExistingMember,
		Proxy: m.rec.Proxy(), KeepMatchmakerSet: m.keepMatchmakerSet})
	if err != nil {
		return err
	}
	m.rt = rt
	go func() {
		<-rt.Done()
		m.mu.Lock()
		m.err = rt.Err()
		m.mu.Unlock()
		close(m.done)
	}()
	m.startControl()
	m.log.Info("serving the cell", "cell", m.rec.CellID, "journals", len(m.rec.Journals), "role", recordRole(m.rec).String(),
		"replicas", len(m.rec.Replicas), "proxies", len(m.rec.Proxies))
	return nil
}

// Done is closed when the runtime stopped on its own (a fault); Err says why.
func (m *Machine) Done() <-chan struct{} { return m.done }

// Err is why the runtime stopped.
func (m *Machine) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// HandOff hands every journal this machine leads to a live follower and
// waits until the handoffs left (runtime.Runtime.HandOff): the first step of
// a graceful shutdown, so a rolling restart costs no election. It reports
// how many leaderships it handed on; an idle, replica or proxy machine
// hands none.
func (m *Machine) HandOff(ctx context.Context) (int, error) {
	m.mu.Lock()
	rt, leads := m.rt, !m.rec.Replica() && !m.rec.Proxy()
	m.mu.Unlock()
	if rt == nil || !leads {
		return 0, nil
	}
	return rt.HandOff(ctx)
}

// Close stops the machine.
func (m *Machine) Close() error {
	m.mu.Lock()
	rt, cp := m.rt, m.cp
	m.cp = nil
	m.mu.Unlock()
	if cp != nil {
		cp.stop()
	}
	if rt != nil {
		rt.Stop()
	}
	return m.closeDB()
}

// Call forwards a client call to the runtime.
func (m *Machine) Call(ctx context.Context, c host.Call) (host.Response, error) {
	rt := m.Runtime()
	if rt == nil {
		return host.Response{}, server.ErrNotServing
	}
	resp, err := rt.Call(ctx, c)
	if err == nil && c.Kind == host.CallRetire && resp.Admin.Refusal == "" {
		m.retired(c.Retire.Journal)
	}
	if err == nil {
		m.markDeleted(c, &resp)
	}
	return resp, err
}

// Submit forwards pipelined calls to the runtime (runtime.Runtime.Submit).
func (m *Machine) Submit(ctx context.Context, calls []host.Call, reply func(int, host.Response)) error {
	rt := m.Runtime()
	if rt == nil {
		return server.ErrNotServing
	}
	return rt.Submit(ctx, calls, func(i int, resp host.Response) {
		m.markDeleted(calls[i], &resp)
		reply(i, resp)
	})
}

// Deliver forwards inbound peer traffic to the runtime.
func (m *Machine) Deliver(from uint64, batch []host.Envelope) {
	if rt := m.Runtime(); rt != nil {
		rt.Deliver(paxos.NodeID(from), batch)
	}
}
