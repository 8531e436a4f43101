package machinerecord

// These tests check the machine record: it round-trips; Load tells a missing
// record (ErrMissing) from a damaged one (ErrDamaged, a storage corruption)
// for every truncation and every single-bit flip of the file; a stale temp
// file is ignored; a crash at every seam of a rewrite (before the temp
// file's fsync, before the rename, before the directory's fsync, after) on
// Pebble's crashable MemFS, keeping 0%, 50% (seeds 1-4) or 100% of the
// unsynced data, recovers the old record or the new one and nothing else;
// and hostile bytes never panic the decoder (fuzz).

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/storetest"
)

var sample = Record{
	NodeID: 0xfeed, CellID: 0xce11, Incarnation: 3, VoteRound: 2, VoteNode: 0xfeed,
	Members:  []Member{{NodeID: 0xfeed, Addr: "10.0.0.1:7000"}, {NodeID: 2, Addr: "10.0.0.2:7000"}},
	Journals: []JournalID{{Tenant: 1, Journal: 1}, {Tenant: 1, Journal: 2}},
}

func newFS(t *testing.T) *vfs.MemFS {
	fs := vfs.NewCrashableMem()
	if err := fs.MkdirAll("/data", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"/", "/data"} {
		f, err := fs.OpenDir(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	return fs
}

func equal(a, b Record) bool {
	ea, _ := Encode(a)
	eb, _ := Encode(b)
	return bytes.Equal(ea, eb)
}

// replicaSample is a replica machine's record: the plan's replicas name
// it, and it holds no vote of the plan.
var replicaSample = Record{
	NodeID: 0xbeef, CellID: 0xce11, Incarnation: 1,
	Members:  []Member{{NodeID: 0xfeed, Addr: "10.0.0.1:7000"}, {NodeID: 2, Addr: "10.0.0.2:7000"}},
	Journals: []JournalID{{Tenant: 1, Journal: 1}},
	Replicas: []Member{{NodeID: 0xbeef, Addr: "10.0.0.9:7000"}},
}

// removedSample is a replica machine's record after the operator took it
// off the replica list: still a replica machine, listed nowhere.
var removedSample = Record{
	NodeID: 0xbeef, CellID: 0xce11, Incarnation: 2,
	Members:        []Member{{NodeID: 0xfeed, Addr: "10.0.0.1:7000"}, {NodeID: 2, Addr: "10.0.0.2:7000"}},
	Journals:       []JournalID{{Tenant: 1, Journal: 1}},
	Replicas:       []Member{{NodeID: 0xcafe, Addr: "10.0.0.8:7000"}},
	ReplicaRemoved: true,
}

// removedProxySample is a proxy machine's record after the operator took
// it off the proxy list: still a proxy machine, listed nowhere.
var removedProxySample = Record{
	NodeID: 0xbeef, CellID: 0xce11, Incarnation: 2,
	Members:      []Member{{NodeID: 0xfeed, Addr: "10.0.0.1:7000"}, {NodeID: 2, Addr: "10.0.0.2:7000"}},
	Journals:     []JournalID{{Tenant: 1, Journal: 1}},
	Proxies:      []Member{{NodeID: 0xcafe, Addr: "10.0.0.8:7000"}},
	ProxyRemoved: true,
}

func TestRoundTrip(t *testing.T) {
	fs := newFS(t)
	if !replicaSample.Replica() || replicaSample.Founder() || sample.Replica() || !removedSample.Replica() {
		t.Fatal("Replica and Founder misjudge the samples")
	}
	if !removedProxySample.Proxy() || removedProxySample.Replica() || sample.Proxy() {
		t.Fatal("Proxy misjudges the samples")
	}
	for _, r := range []Record{{NodeID: 1}, sample, replicaSample, removedSample, removedProxySample} {
		if err := Store(fs, "/data", r); err != nil {
			t.Fatal(err)
		}
		got, err := Load(fs, "/data")
		if err != nil || !equal(got, r) {
			t.Fatalf("load = %+v, %v; want %+v", got, err, r)
		}
	}
	enc, _ := Encode(sample)
	t.Logf("file:\n%s", enc)
}

func TestMissingVersusDamaged(t *testing.T) {
	fs := newFS(t)
	if _, err := Load(fs, "/data"); !errors.Is(err, ErrMissing) || errors.Is(err, storage.ErrCorruption) {
		t.Fatalf("load of nothing: %v, want ErrMissing", err)
	}
	enc, _ := Encode(sample)
	write := func(p []byte) {
		f, err := fs.Create("/data/"+FileName, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = f.Write(p)
		_ = f.Close()
	}
	check := func(what string, p []byte) {
		t.Helper()
		write(p)
		_, err := Load(fs, "/data")
		if !errors.Is(err, ErrDamaged) || !errors.Is(err, storage.ErrCorruption) || errors.Is(err, ErrMissing) {
			t.Fatalf("%s: %v, want ErrDamaged", what, err)
		}
	}
	for n := 0; n < len(enc); n++ {
		check("truncated", enc[:n])
	}
	for i := range enc {
		for bit := 0; bit < 8; bit++ {
			p := bytes.Clone(enc)
			p[i] ^= 1 << bit
			check("bit flip", p)
		}
	}
	check("trailing byte", append(bytes.Clone(enc), '\n'))
	check("too large", bytes.Repeat([]byte{'x'}, recordBytesMax+1))
}

func TestInvalidRecordsAreRefused(t *testing.T) {
	for name, r := range map[string]Record{
		"node 0":                       {},
		"plan no cell":                 {NodeID: 1, Members: []Member{{NodeID: 1}}},
		"dup member":                   {NodeID: 1, CellID: 1, Members: []Member{{NodeID: 2}, {NodeID: 2}}},
		"member 0":                     {NodeID: 1, CellID: 1, Members: []Member{{NodeID: 0}}},
		"unset journal":                {NodeID: 1, CellID: 1, Journals: []JournalID{{Tenant: 1}}},
		"dup journal":                  {NodeID: 1, CellID: 1, Journals: []JournalID{{1, 1}, {1, 1}}},
		"addr too long":                {NodeID: 1, CellID: 1, Members: []Member{{NodeID: 1, Addr: strings.Repeat("a", addrBytesMax+1)}}},
		"too many joined":              {NodeID: 1, CellID: 1, Journals: make([]JournalID, journalsMax+1)},
		"promise past the round bound": {NodeID: 1, PromisedRound: math.MaxUint64},
		"vote past the round bound":    {NodeID: 1, CellID: 1, VoteRound: 1<<62 + 1},
		"replicas no cell":             {NodeID: 1, Replicas: []Member{{NodeID: 2}}},
		"replica 0":                    {NodeID: 1, CellID: 1, Replicas: []Member{{NodeID: 0}}},
		"replica a member":             {NodeID: 1, CellID: 1, Members: []Member{{NodeID: 2}}, Replicas: []Member{{NodeID: 2}}},
		"replicas unsorted":            {NodeID: 1, CellID: 1, Replicas: []Member{{NodeID: 3}, {NodeID: 2}}},
		"replica a founder":            {NodeID: 2, CellID: 1, VoteRound: 1, Members: []Member{{NodeID: 2}}, Replicas: []Member{{NodeID: 2}}},
		"removed replica no cell":      {NodeID: 1, ReplicaRemoved: true},
		"removed replica still listed": {NodeID: 1, CellID: 1, Replicas: []Member{{NodeID: 1}}, ReplicaRemoved: true},
		"removed replica a founder":    {NodeID: 2, CellID: 1, VoteRound: 1, Members: []Member{{NodeID: 2}}, ReplicaRemoved: true},
		"proxies no cell":              {NodeID: 1, Proxies: []Member{{NodeID: 2}}},
		"proxy 0":                      {NodeID: 1, CellID: 1, Proxies: []Member{{NodeID: 0}}},
		"proxy a member":               {NodeID: 1, CellID: 1, Members: []Member{{NodeID: 2}}, Proxies: []Member{{NodeID: 2}}},
		"proxy a replica":              {NodeID: 1, CellID: 1, Replicas: []Member{{NodeID: 2}}, Proxies: []Member{{NodeID: 2}}},
		"proxies unsorted":             {NodeID: 1, CellID: 1, Proxies: []Member{{NodeID: 3}, {NodeID: 2}}},
		"proxy serving a joined journal": {NodeID: 2, CellID: 1, Proxies: []Member{{NodeID: 2}},
			Joined: []JoinedJournal{{Tenant: 1, Journal: 1, Members: []uint64{3}}}},
		"removed proxy no cell":      {NodeID: 1, ProxyRemoved: true},
		"removed proxy still listed": {NodeID: 1, CellID: 1, Proxies: []Member{{NodeID: 1}}, ProxyRemoved: true},
		"removed proxy a founder":    {NodeID: 2, CellID: 1, VoteRound: 1, Members: []Member{{NodeID: 2}}, ProxyRemoved: true},
		"removed proxy a replica":    {NodeID: 2, CellID: 1, Replicas: []Member{{NodeID: 2}}, ProxyRemoved: true},
		"removed proxy and replica":  {NodeID: 2, CellID: 1, ReplicaRemoved: true, ProxyRemoved: true},
	} {
		if _, err := Encode(r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if err := Store(newFS(t), "/data", r); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: store: %v, want ErrInvalid", name, err)
		}
	}
}

func TestStaleTempFileIgnored(t *testing.T) {
	fs := newFS(t)
	if err := Store(fs, "/data", sample); err != nil {
		t.Fatal(err)
	}
	f, _ := fs.Create("/data/"+tempName, vfs.WriteCategoryUnspecified)
	_, _ = f.Write([]byte("half a rec"))
	_ = f.Close()
	if got, err := Load(fs, "/data"); err != nil || !equal(got, sample) {
		t.Fatalf("load with a stale temp file: %v", err)
	}
	next := sample
	next.Incarnation++
	if err := Store(fs, "/data", next); err != nil {
		t.Fatalf("store over a stale temp file: %v", err)
	}
	if got, err := Load(fs, "/data"); err != nil || !equal(got, next) {
		t.Fatalf("load after rewrite: %+v %v", got, err)
	}
}

// TestCrashAtEverySeam crashes a first write and a rewrite at each of their
// seams and checks the recovered record is the old one or the new one.
func TestCrashAtEverySeam(t *testing.T) {
	next := sample
	next.Incarnation++
	next.Members = append(next.Members, Member{NodeID: 3, Addr: "10.0.0.3:7000"})
	var m storetest.Matrix
	for _, tc := range []struct {
		seam string
		old  *Record
	}{{"machine record first write", nil}, {"machine record rewrite", &sample}} {
		mem := newFS(t)
		if tc.old != nil {
			if err := Store(mem, "/data", *tc.old); err != nil {
				t.Fatal(err)
			}
		}
		hfs := storetest.NewHookFS(mem)
		type shot struct {
			at string
			k  storetest.Keep
			fs *vfs.MemFS
		}
		var shots []shot
		take := func(at string) {
			for _, k := range storetest.Keeps {
				shots = append(shots, shot{at, k, mem.CrashClone(cloneCfg(k))})
			}
		}
		hfs.SetHook(func(op, path string) {
			switch {
			case op == "sync" && strings.HasSuffix(path, tempName):
				take("before temp fsync")
			case op == "rename":
				take("before rename")
			case op == "sync" && path == "/data":
				take("before dir fsync")
			}
		})
		if err := Store(hfs, "/data", next); err != nil {
			t.Fatal(err)
		}
		hfs.SetHook(nil)
		take("after Store")
		for _, s := range shots {
			got, err := Load(s.fs, "/data")
			state := ""
			switch {
			case err == nil && equal(got, next):
				state = "new"
			case err == nil && tc.old != nil && equal(got, *tc.old):
				state = "old"
			case errors.Is(err, ErrMissing) && tc.old == nil:
				state = "none"
			default:
				t.Fatalf("%s, crash %s keeping %s: %+v %v", tc.seam, s.at, s.k, got, err)
			}
			wantNew := s.at == "after Store" || (s.at == "before dir fsync" && s.k.Percent == 100)
			wantOld := s.at == "before temp fsync" || s.at == "before rename" || (s.at == "before dir fsync" && s.k.Percent == 0)
			if (wantNew && state != "new") || (wantOld && state == "new") {
				t.Fatalf("%s, crash %s keeping %s: recovered %s", tc.seam, s.at, s.k, state)
			}
			m.Add(tc.seam, s.at, s.k, state)
		}
	}
	m.Log(t)
}

func cloneCfg(k storetest.Keep) vfs.CrashCloneCfg {
	cfg := vfs.CrashCloneCfg{UnsyncedDataPercent: k.Percent}
	if k.Percent > 0 {
		cfg.RNG = rand.New(rand.NewPCG(k.Seed, 0x5eed))
	}
	return cfg
}

func FuzzDecode(f *testing.F) {
	for _, r := range []Record{{NodeID: 1}, sample} {
		enc, _ := Encode(r)
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		r, err := Decode(p)
		if err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("decoded an invalid record: %v", err)
		}
		if again, _ := Encode(r); !bytes.Equal(again, p) {
			t.Fatalf("accepted a non-canonical encoding")
		}
	})
}
