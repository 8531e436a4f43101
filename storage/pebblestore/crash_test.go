package pebblestore

// These tests crash the store at every durability seam on Pebble's crashable
// in-memory filesystem (vfs.NewCrashableMem) and recover it from crash
// clones (MemFS.CrashClone) that keep 0%, 50% (seeds 1-4) or 100% of the
// data that was written but not synced.
//
// Each seam is a setup (synced) and one or more steps. The same ops run on a
// memstore model per journal, whose state after each step is a state the
// protocol allows: a crash may recover the state before the seam, after it,
// or (for multi-step seams) after an earlier step, and nothing else. No
// faulty record, no corruption error (a torn WAL tail is not rot), no lost
// synced op. Two crash points per seam:
//
//   - before WAL fsync: a hook in the filesystem takes the clones just before
//     Pebble syncs the WAL for the seam's last step (its bytes are written,
//     not synced). Keeping 0% must give the state before; 100% the state
//     after.
//   - after: the step returned; every clone must give the state after.
//
// The test logs the seam matrix: which state each clone recovered to. The
// 50% clones are not bit-reproducible (CrashClone walks directories in Go
// map order), but every one of them must pass, so the verdict is.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/memstore"
	"github.com/parosdb/paros/storage/storetest"
)

var (
	jA = journal.ID{Tenant: 5, Journal: 1}
	jB = journal.ID{Tenant: 5, Journal: 2}
	jC = journal.ID{Tenant: 6, Journal: 1}
)

func markerOf(id journal.ID) storage.Marker {
	m := storetest.TestMarker()
	m.Journal = id
	return m
}

// world runs the same ops on the store and on one memstore model per journal.
type world struct {
	t      *testing.T
	db     *DB
	models map[journal.ID]*memstore.Store
}

func (w *world) model(id journal.ID) *memstore.Store {
	m := w.models[id]
	if m == nil {
		m = memstore.New()
		w.models[id] = m
	}
	return m
}

func (w *world) format(id journal.ID) {
	w.t.Helper()
	if err := w.db.Journal(id).Format(markerOf(id)); err != nil {
		w.t.Fatalf("format %s: %v", id, err)
	}
	if err := w.model(id).Format(markerOf(id)); err != nil {
		w.t.Fatal(err)
	}
}

// commit runs one group commit; the models apply it as synced (they keep the
// logical state, what a crash may or may not keep).
func (w *world) commit(bs ...Batch) {
	w.t.Helper()
	if err := w.db.Commit(bs...); err != nil {
		w.t.Fatalf("commit: %v", err)
	}
	for _, b := range bs {
		if err := w.model(b.Journal).Apply(b.Ops, true); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) apply(id journal.ID, sync bool, ops ...paxos.WriteOp) {
	w.t.Helper()
	w.commit(Batch{Journal: id, Ops: ops, Sync: sync})
}

func (w *world) render(journals []journal.ID) string {
	var sb strings.Builder
	for _, id := range journals {
		b, err := w.model(id).Boot()
		if err != nil {
			w.t.Fatal(err)
		}
		fmt.Fprintf(&sb, "journal %s\n%s", id, storetest.Render(b))
	}
	return sb.String()
}

// bootRender opens a DB on fs and renders the journals as the models do.
func bootRender(t *testing.T, fs vfs.FS, journals []journal.ID) (string, error) {
	db, err := Open(testDir, testOptions(fs))
	if err != nil {
		return "", err
	}
	defer func() { _ = db.Close() }()
	var sb strings.Builder
	for _, id := range journals {
		b, err := db.Journal(id).Boot()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, "journal %s\n%s", id, storetest.Render(b))
	}
	return sb.String(), nil
}

func ballotOf(r uint64, n paxos.NodeID) paxos.Ballot { return paxos.Ballot{Round: r, Node: n} }

// bigAccept is an accept whose value spans most of a 4 KiB block, so a batch
// of them spans several blocks and a 50% crash clone can tear it.
func bigAccept(s paxos.Slot, b paxos.Ballot) paxos.WriteOp {
	rec := bytes.Repeat([]byte{byte(s)}, 3000)
	return paxos.WriteOp{Kind: paxos.OpAccept, Slot: s, Ballot: b,
		Command: journal.Write(journal.Entry{Leader: journal.LeaderUUID{Lo: 1}, Seq: journal.Seq(s), Records: [][]byte{rec}})}
}

type seamCase struct {
	name     string
	journals []journal.ID
	setup    func(w *world)
	steps    []func(w *world)
}

func seamCases() []seamCase {
	b1, b2 := ballotOf(1, 1), ballotOf(2, 2)
	accepts := func(w *world, id journal.ID, from, to paxos.Slot, b paxos.Ballot) {
		var ops []paxos.WriteOp
		for s := from; s <= to; s++ {
			ops = append(ops, storetest.Accept(s, b, 1))
		}
		w.apply(id, true, ops...)
	}
	return []seamCase{{
		name: "format", journals: []journal.ID{jA},
		steps: []func(*world){func(w *world) { w.format(jA) }},
	}, {
		name: "promise raised", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: b1})
			accepts(w, jA, 1, 3, b1)
		},
		steps: []func(*world){func(w *world) {
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: b2})
		}},
	}, {
		name: "op batch committed (multi-block)", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			accepts(w, jA, 1, 2, b1)
		},
		steps: []func(*world){func(w *world) {
			ops := []paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: b2}}
			for s := paxos.Slot(3); s <= 10; s++ {
				ops = append(ops, bigAccept(s, b2))
			}
			ops = append(ops, storetest.Accept(2, b2, 2), paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 2})
			w.apply(jA, true, ops...)
		}},
	}, {
		name: "group commit of 3 journals", journals: []journal.ID{jA, jB, jC},
		setup: func(w *world) {
			for _, id := range []journal.ID{jA, jB, jC} {
				w.format(id)
				accepts(w, id, 1, 4, b1)
			}
		},
		steps: []func(*world){func(w *world) {
			w.commit(
				Batch{Journal: jA, Ops: []paxos.WriteOp{bigAccept(5, b1), bigAccept(6, b1)}, Sync: true},
				Batch{Journal: jB, Ops: []paxos.WriteOp{{Kind: paxos.OpSetPromise, Ballot: b2}, bigAccept(5, b2)}, Sync: true},
				Batch{Journal: jC, Ops: []paxos.WriteOp{{Kind: paxos.OpTruncate, Slot: 3, State: storetest.Sealed(1, 9, 2)}}},
			)
		}},
	}, {
		name: "truncate + seal", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: b1})
			accepts(w, jA, 1, 6, b1)
		},
		steps: []func(*world){func(w *world) {
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpTruncate, Slot: 4, State: storetest.Sealed(2, 30, 10)})
		}},
	}, {
		name: "TrimmedTo (promise kept)", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpSetPromise, Ballot: ballotOf(5, 3)})
			accepts(w, jA, 1, 3, b1)
			accepts(w, jA, 9, 9, b1)
		},
		steps: []func(*world){func(w *world) {
			w.apply(jA, true, paxos.WriteOp{Kind: paxos.OpTrimmedTo, Slot: 8, State: storetest.Sealed(3, 70, 60)})
		}},
	}, {
		name: "relaxed chosen index, then sync", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			accepts(w, jA, 1, 4, b1)
		},
		steps: []func(*world){
			func(w *world) { w.apply(jA, false, paxos.WriteOp{Kind: paxos.OpSetChosenIndex, Slot: 3}) },
			func(w *world) { w.apply(jA, true, storetest.Accept(5, b1, 1)) },
		},
	}, {
		name: "rewrite of a faulty record", journals: []journal.ID{jA},
		setup: func(w *world) {
			w.format(jA)
			accepts(w, jA, 1, 3, b2)
			w.db.Journal(jA).damageValue(w.t, 2)
			w.model(jA).Rot(2)
		},
		steps: []func(*world){func(w *world) {
			if err := w.db.Journal(jA).Rewrite(2, b2, storetest.Cmd(2, 1)); err != nil {
				w.t.Fatal(err)
			}
			if err := w.model(jA).Rewrite(2, b2, storetest.Cmd(2, 1)); err != nil {
				w.t.Fatal(err)
			}
		}},
	}}
}

func cloneCfg(k storetest.Keep) vfs.CrashCloneCfg {
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: k.Percent}
	if k.Percent > 0 {
		cfg.RNG = rand.New(rand.NewPCG(k.Seed, 0x5eed))
	}
	return cfg
}

func TestCrashSeams(t *testing.T) {
	var matrix storetest.Matrix
	for _, sc := range seamCases() {
		// Arrange: the store and its models, after the synced setup.
		mem := vfs.NewCrashableMem()
		hfs := storetest.NewHookFS(mem)
		w := &world{t: t, db: mustOpen(t, hfs), models: map[journal.ID]*memstore.Store{}}
		if sc.setup != nil {
			sc.setup(w)
		}
		states := []string{w.render(sc.journals)}

		// Act: run the steps; clone just before the last step's WAL fsync,
		// and after it returned.
		type shot struct {
			at string
			k  storetest.Keep
			fs *vfs.MemFS
		}
		var (
			mu    sync.Mutex
			shots []shot
		)
		take := func(at string) {
			mu.Lock()
			defer mu.Unlock()
			for _, k := range storetest.Keeps {
				shots = append(shots, shot{at, k, mem.CrashClone(cloneCfg(k))})
			}
		}
		for i, step := range sc.steps {
			if i == len(sc.steps)-1 {
				var once sync.Once
				hfs.SetHook(func(op, path string) {
					if op == "sync" && strings.HasSuffix(path, ".log") {
						once.Do(func() { take("before WAL fsync") })
					}
				})
			}
			step(w)
			states = append(states, w.render(sc.journals))
		}
		hfs.SetHook(nil)
		take("after")
		_ = w.db.Close()

		// Check: every clone boots to an allowed state; the ends are exact.
		name := func(i int) string {
			switch i {
			case 0:
				return "pre"
			case len(states) - 1:
				return "post"
			}
			return fmt.Sprintf("mid%d", i)
		}
		if len(shots) != 2*len(storetest.Keeps) {
			t.Fatalf("%s: %d crash clones, want %d (no WAL fsync seen?)", sc.name, len(shots), 2*len(storetest.Keeps))
		}
		for _, s := range shots {
			got, err := bootRender(t, s.fs, sc.journals)
			if err != nil {
				t.Fatalf("%s, crash %s keeping %s: %v", sc.name, s.at, s.k, err)
			}
			idx := -1
			for i := len(states) - 1; i >= 0; i-- {
				if states[i] == got {
					idx = i
					break
				}
			}
			if idx < 0 {
				t.Fatalf("%s, crash %s keeping %s: a state the protocol does not allow:\n%s\nallowed:\n%s",
					sc.name, s.at, s.k, got, strings.Join(states, "--- or ---\n"))
			}
			last := len(states) - 1
			switch {
			case s.at == "after" && idx != last,
				s.at != "after" && s.k.Percent == 100 && idx != last,
				s.at != "after" && s.k.Percent == 0 && idx != 0:
				t.Fatalf("%s, crash %s keeping %s: recovered %s", sc.name, s.at, s.k, name(idx))
			}
			matrix.Add(sc.name, s.at, s.k, name(idx))
		}
	}
	matrix.Log(t)
}

// TestTornTailIsNotRot writes a batch spanning several WAL blocks and crashes
// just before its fsync, keeping a random half of the unsynced blocks under
// many seeds. Some clones hold part of the batch (their WAL is longer than
// what was synced): Pebble's replay must drop that torn tail, and boot must
// see the state before the batch, with no faulty record and no corruption.
func TestTornTailIsNotRot(t *testing.T) {
	mem := vfs.NewCrashableMem()
	hfs := storetest.NewHookFS(mem)
	w := &world{t: t, db: mustOpen(t, hfs), models: map[journal.ID]*memstore.Store{}}
	w.format(jA)
	w.apply(jA, true, storetest.Accept(1, ballotOf(1, 1), 1))
	pre := w.render([]journal.ID{jA})

	const seeds = 6
	var clones []*vfs.MemFS
	var synced *vfs.MemFS
	var once sync.Once
	hfs.SetHook(func(op, path string) {
		if op == "sync" && strings.HasSuffix(path, ".log") {
			once.Do(func() {
				synced = mem.CrashClone(vfs.CrashCloneCfg{})
				for s := range seeds {
					clones = append(clones, mem.CrashClone(cloneCfg(storetest.Keep{Percent: 50, Seed: uint64(100 + s)})))
				}
			})
		}
	})
	var ops []paxos.WriteOp
	for s := paxos.Slot(2); s <= 13; s++ {
		ops = append(ops, bigAccept(s, ballotOf(1, 1)))
	}
	w.apply(jA, true, ops...)
	hfs.SetHook(nil)
	post := w.render([]journal.ID{jA})
	_ = w.db.Close()

	walBytes := func(fs *vfs.MemFS) int64 {
		names, _ := fs.List(testDir)
		var n int64
		for _, name := range names {
			if strings.HasSuffix(name, ".log") {
				if st, err := fs.Stat(fs.PathJoin(testDir, name)); err == nil {
					n += st.Size()
				}
			}
		}
		return n
	}
	base := walBytes(synced)
	torn := 0
	for i, c := range clones {
		extra := walBytes(c) - base
		got, err := bootRender(t, c, []journal.ID{jA})
		if err != nil {
			t.Fatalf("clone %d: %v (a torn tail reported as an error)", i, err)
		}
		switch got {
		case pre:
			if extra > 0 {
				torn++
			}
		case post:
		default:
			t.Fatalf("clone %d recovered a state that is neither before nor after the batch:\n%s", i, got)
		}
	}
	t.Logf("%d of %d clones held a torn tail of the batch; all booted to the state before it", torn, seeds)
	if torn == 0 {
		t.Fatalf("no clone tore the batch: the test proves nothing")
	}
}
