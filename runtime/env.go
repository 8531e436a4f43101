package runtime

// This file is the host's ports on a real process: env (send, persist,
// reply, the stores, randomness), the observer, and the matchmaker's boot.

import (
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/matchmaker"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/storage"
)

// bootMatchmaker opens the matchmaker's registry store with the boot
// refusals of a journal store: a missing one under an existing member is
// amnesia, one formatted under another matchmaker set a mismatch.
func bootMatchmaker(cfg Config) (*matchmaker.Matchmaker, error) {
	reg := cfg.DB.Registry()
	want := storage.RegistryMarker{Node: cfg.NodeID, Matchmakers: slices.Sorted(slices.Values(cfg.Matchmakers))}
	bs, err := reg.Boot()
	if err != nil {
		return nil, fmt.Errorf("matchmaker registry: %w", err)
	}
	dec, err := storage.CheckRegistryBoot(cfg.RegistryClaim, bs.Marker, want)
	if err != nil {
		return nil, fmt.Errorf("matchmaker registry: %w", err)
	}
	if dec == storage.DecideFormat {
		if err := reg.Format(want); err != nil {
			return nil, fmt.Errorf("matchmaker registry: %w", err)
		}
		if bs, err = reg.Boot(); err != nil {
			return nil, fmt.Errorf("matchmaker registry: %w", err)
		}
	}
	return matchmaker.New(cfg.NodeID, bs.Generation, bs.Registries)
}

// env implements host.Env on the loop goroutine.
type env struct{ r *Runtime }

func (e env) Send(to paxos.NodeID, batch []host.Envelope) { e.r.tr.send(to, batch) }

func (e env) Persist(t host.Token, j journal.ID, ops []paxos.WriteOp, sync bool) {
	e.r.store.submit(persistReq{token: t, journal: j, ops: ops, sync: sync})
}

func (e env) Reply(id host.CallID, resp host.Response) {
	if sink, ok := e.r.calls[id]; ok {
		delete(e.r.calls, id)
		sink(resp)
	}
}

func (e env) BootStore(j journal.ID) (*storage.BootState, error) {
	return e.r.cfg.DB.Journal(j).Boot()
}

func (e env) FormatStores(ms []storage.Marker) error { return e.r.cfg.DB.FormatJournals(ms) }

// ReopenStore: the Pebble DB refuses writes after a fault until the process
// reopens it, so a quarantined journal cannot come back in this process:
// its reopen fails, the journal goes down, and a process with every journal
// down stops with a storage fault (exit 75) for its supervisor to restart.
func (e env) ReopenStore(j journal.ID) error {
	return fmt.Errorf("paros/runtime: journal %s: the store must be reopened by a restart", j)
}

func (e env) Rand() uint64 { return e.r.rng.Uint64() }

func (e env) PersistRegistry(t host.Token, ops []matchmaker.WriteOp) {
	e.r.store.submit(persistReq{token: t, registry: ops})
}

// DeleteStore deletes a retired journal's keys (one synced range delete).
// DeleteStore queues the store's deletion behind every batch of the
// journal the storer holds (persistReq.remove); an error is logged there.
func (e env) DeleteStore(j journal.ID) error {
	e.r.store.submit(persistReq{journal: j, remove: true})
	return nil
}

// KeepMatchmakerSet implements host.MatchmakerSetEnv.
func (e env) KeepMatchmakerSet(s paxos.MatchmakerSet) {
	if e.r.cfg.KeepMatchmakerSet != nil {
		e.r.cfg.KeepMatchmakerSet(s)
	}
}

// observer feeds metrics from the host's observation port.
type observer struct{ r *Runtime }

func (o observer) Applied(_ paxos.NodeID, j journal.ID, c paxos.Applied) {
	o.r.metrics.Commits.WithLabelValues(j.String()).Inc()
}
