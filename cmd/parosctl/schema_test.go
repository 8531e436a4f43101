// This file runs every parosctl command that prints JSON against a real
// cell (internal/testcell: machines in this process, served over gRPC with
// TLS and tokens, as `paros serve` serves them) and decodes its -o json
// output with DisallowUnknownFields into the Go type its help documents,
// checking that the fields carry the right values: the journal created,
// the records written read back byte for byte (0xff included, base64),
// the gap a truncate leaves, the fence a claim sets. A command with a
// schema that no case runs fails the test.
//
// It also checks the write fence rule end to end: a journal never claimed
// is claimed, a fence this user's parosctl claimed is reused, a fence an
// application's Writer holds (or another user's parosctl) is refused with
// exit 3 until --take-over or --fence, and a multi-writer journal is
// written unfenced.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/internal/buildinfo"
	"github.com/parosdb/paros/internal/testcell"
)

// ctl runs parosctl in this process against a test cell.
type ctl struct {
	t       *testing.T
	servers string
	cell    *testcell.Cell
	covered map[string]bool
}

func startCell(t *testing.T, nodes int) *ctl {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cell")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Nodes: nodes, Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Each test is its own user: its own fence book.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return &ctl{t: t, servers: strings.Join(c.Addrs(), ","), cell: c, covered: map[string]bool{}}
}

// run runs parosctl args with stdin and returns its standard output, its
// standard error and its exit code.
func (x *ctl) run(stdin string, args ...string) (string, string, int) {
	x.t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetArgs(append([]string{"--servers", x.servers, "--ca", x.cell.CAFile, "--token", x.cell.Token, "--timeout", "20s"}, args...))
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.Execute()
	code := exitOK
	var ee exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case err != nil:
		code = exitBadArgs
	}
	if err != nil {
		errb.WriteString(err.Error())
	}
	return out.String(), errb.String(), code
}

// must runs args and fails the test unless it exits 0.
func (x *ctl) must(args ...string) string {
	x.t.Helper()
	out, errs, code := x.run("", args...)
	if code != exitOK {
		x.t.Fatalf("parosctl %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// schemaOf is the JSON type the command args runs documents; it marks
// the command covered.
func (x *ctl) schemaOf(args []string) reflect.Type {
	x.t.Helper()
	cmd, _, err := newRoot().Find(args)
	if err != nil {
		x.t.Fatalf("parosctl %s: %v", strings.Join(args, " "), err)
	}
	x.covered[cmd.CommandPath()] = true
	return schemaTypes[cmd.Annotations[schemaKey]]
}

// jsonOf runs args with -o json and decodes the output strictly into T,
// which must be the type the command documents.
func jsonOf[T any](x *ctl, stdin string, args ...string) T {
	x.t.Helper()
	var v T
	if want := x.schemaOf(args); want != reflect.TypeOf(v) {
		x.t.Fatalf("parosctl %s documents %v, the test decodes %T", strings.Join(args, " "), want, v)
	}
	out, errs, code := x.run(stdin, append(args, "-o", "json")...)
	if code != exitOK {
		x.t.Fatalf("parosctl %s -o json: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		x.t.Fatalf("parosctl %s -o json: %v in %s", strings.Join(args, " "), err, out)
	}
	if dec.More() {
		x.t.Fatalf("parosctl %s -o json: more than one document: %s", strings.Join(args, " "), out)
	}
	return v
}

// linesOf is jsonOf for a command printing JSON Lines.
func linesOf[T any](x *ctl, args ...string) []T {
	x.t.Helper()
	var zero T
	if want := x.schemaOf(args); want != reflect.TypeOf(zero) {
		x.t.Fatalf("parosctl %s documents %v, the test decodes %T", strings.Join(args, " "), want, zero)
	}
	out := x.must(append(args, "-o", "json")...)
	var vs []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v T
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			x.t.Fatalf("parosctl %s -o json: line %q: %v", strings.Join(args, " "), line, err)
		}
		vs = append(vs, v)
	}
	return vs
}

func TestEveryCommandsJSONAgainstACell(t *testing.T) {
	x := startCell(t, 3)
	binary := []byte{0xff, 0x00, '\n', 0xfe}
	file := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(file, binary, 0o600); err != nil {
		t.Fatal(err)
	}

	if v := jsonOf[buildinfo.Info](x, "", "version"); v.Binary != "parosctl" || v.Go == "" || v.Version == "" {
		t.Errorf("version: %+v", v)
	}
	if v := jsonOf[tenantOut](x, "", "tenant", "create", "shop"); v.Name != "shop" || len(v.ID) != 16 {
		t.Errorf("tenant create: %+v", v)
	}
	orders := jsonOf[journalOut](x, "", "journal", "create", "shop/orders", "--quorum", "flexible:2:2")
	if orders.Tenant != "shop" || orders.Name != "orders" || len(orders.Members) != 3 || orders.Quorum != "flexible:2:2" || orders.MultiWriter {
		t.Errorf("journal create: %+v", orders)
	}
	if v := jsonOf[journalOut](x, "", "journal", "create", "events", "--writer", "multi"); v.Tenant != client.DefaultTenant || !v.MultiWriter {
		t.Errorf("journal create --writer multi: %+v", v)
	}
	if v := jsonOf[[]journalOut](x, "", "journal", "list"); len(v) != 2 {
		t.Errorf("journal list: %+v", v)
	}
	if v := jsonOf[journalOut](x, "", "journal", "show", "shop/orders"); v.ID != orders.ID {
		t.Errorf("journal show: %+v, want id %s", v, orders.ID)
	}
	if v := jsonOf[[]tenantOut](x, "", "tenant", "list"); !slices.ContainsFunc(v, func(t tenantOut) bool { return t.Name == "shop" && t.Journals == 1 }) {
		t.Errorf("tenant list: %+v", v)
	}
	if v := jsonOf[tenantShowOut](x, "", "tenant", "show", "shop"); len(v.Journals) != 1 || v.Journals[0].Name != "orders" {
		t.Errorf("tenant show: %+v", v)
	}

	// Writes: the first claims (the journal was never claimed), the next
	// ones reuse the fence; a binary record goes in whole with --raw.
	w1 := jsonOf[writeOut](x, "", "write", "shop/orders", "alpha")
	if !w1.Claimed || len(w1.Fence) != 32 || len(w1.Batches) != 1 || w1.Batches[0].Outcome != "accepted" || w1.Batches[0].Seq != 1 ||
		w1.Batches[0].State == nil || w1.Batches[0].State.Fence != w1.Fence {
		t.Errorf("write: %+v", w1)
	}
	w2 := jsonOf[writeOut](x, "", "journal", "write", "shop/orders", "--file", file, "--raw")
	if w2.Claimed || w2.Fence != w1.Fence || w2.Batches[0].Seq != 2 || w2.Batches[0].Count != 1 {
		t.Errorf("journal write --file --raw: %+v", w2)
	}
	w3 := jsonOf[writeOut](x, "beta\ngamma\n", "write", "shop/orders", "-")
	if w3.Fence != w1.Fence || w3.Batches[0].Seq != 3 || w3.Batches[0].Count != 2 {
		t.Errorf("write -: %+v", w3)
	}
	if v := jsonOf[writeOut](x, "", "write", "events", "e1", "e2"); v.Fence != "none" || v.Batches[0].Outcome != "accepted" || v.Batches[0].Count != 2 {
		t.Errorf("write to a multi-writer journal: %+v", v)
	}

	// Reads: the records back, bytes exact.
	want := [][]byte{[]byte("alpha"), binary, []byte("beta"), []byte("gamma")}
	r := jsonOf[readOut](x, "", "journal", "read", "shop/orders")
	if r.Journal != orders.ID || len(r.Records) != len(want) || r.Next != 5 || r.Gap != nil {
		t.Fatalf("journal read: %+v", r)
	}
	for i, rec := range r.Records {
		if rec.Seq != uint64(i+1) || !bytes.Equal(rec.Data, want[i]) {
			t.Errorf("journal read: record %d = %d %q, want %d %q", i, rec.Seq, rec.Data, i+1, want[i])
		}
	}
	if !strings.Contains(x.must("read", "shop/orders", "-o", "json"), `"data":"/wAK/g=="`) {
		t.Error("read -o json: the binary record is not base64 of its bytes")
	}
	tl := linesOf[tailLine](x, "tail", "shop/orders", "--from", "2")
	if len(tl) != 3 || tl[0].Seq != 2 || !bytes.Equal(tl[0].Data, binary) || tl[2].Seq != 4 {
		t.Errorf("tail: %+v", tl)
	}
	if tl := linesOf[tailLine](x, "journal", "tail", "events"); len(tl) != 2 || string(tl[1].Data) != "e2" {
		t.Errorf("journal tail: %+v", tl)
	}

	// The fence moves by claim; truncate carries the fence in force.
	cl := jsonOf[claimOut](x, "", "journal", "claim", "shop/orders")
	if cl.Verdict.Outcome != "fence_set" || cl.Fence == w1.Fence || cl.Verdict.State.Fence != cl.Fence {
		t.Errorf("journal claim: %+v", cl)
	}
	tr := jsonOf[truncateOut](x, "", "journal", "truncate", "shop/orders", "--up-to", "3")
	if tr.Verdict.Outcome != "trimmed" || tr.Verdict.State.FirstSeq != 3 {
		t.Errorf("journal truncate: %+v", tr)
	}
	if g := jsonOf[readOut](x, "", "read", "shop/orders", "--from", "1"); g.Gap == nil || g.Gap.From != 1 || g.Gap.To != 3 ||
		len(g.Records) != 2 || string(g.Records[0].Data) != "beta" {
		t.Errorf("read over a gap: %+v", g)
	}
	if w := jsonOf[writeOut](x, "", "write", "shop/orders", "delta"); w.Fence != cl.Fence || w.Batches[0].Seq != 5 {
		t.Errorf("write after claim: %+v, want fence %s", w, cl.Fence)
	}

	// The servers' facts.
	ins := jsonOf[[]inspectOut](x, "", "journal", "inspect", "shop/orders")
	leaders := 0
	for _, s := range ins {
		if s.Role == "leader" {
			leaders++
			if s.State == nil || s.State.Fence != cl.Fence || s.State.NextSeq != 6 || !slices.Equal(s.Members, orders.Members) {
				t.Errorf("journal inspect: the leader's line %+v", s)
			}
		}
	}
	if len(ins) != 3 || leaders != 1 {
		t.Errorf("journal inspect: %d answers, %d leaders: %+v", len(ins), leaders, ins)
	}
	if ci := jsonOf[[]inspectOut](x, "", "cell", "inspect"); len(ci) != 3 || ci[0].Cell == "" || len(ci[0].Machines) != 3 || ci[0].Role != "" {
		t.Errorf("cell inspect: %+v", ci)
	}
	machines := jsonOf[cellMachinesOut](x, "", "cell", "machines")
	if len(machines.Machines) != 3 || machines.Registry == "" || machines.Machines[0].State != "up" {
		t.Errorf("cell machines: %+v", machines)
	}
	if h := jsonOf[handoffOut](x, "", "journal", "handoff", "shop/orders"); h.Journal != orders.ID || !slices.Contains(orders.Members, h.Leader) {
		t.Errorf("journal handoff: %+v", h)
	}

	// A named journal changes its quorum system in place.
	rq := jsonOf[reconfigureOut](x, "", "journal", "reconfigure", "shop/orders", "--members", strings.Join(orders.Members, ","), "--quorum", "grid:1x3")
	if !slices.Equal(slices.Sorted(slices.Values(rq.Members)), slices.Sorted(slices.Values(orders.Members))) || rq.Quorum != "grid:1x3" ||
		rq.ConfigBallot == "" || rq.Matchmakers != nil {
		t.Errorf("journal reconfigure --quorum: %+v", rq)
	}
	// show tells the placement from where the journal runs now.
	if sh := jsonOf[journalOut](x, "", "journal", "show", "shop/orders"); sh.Quorum != orders.Quorum || sh.Serving == nil ||
		sh.Serving.Quorum != "grid:1x3" || len(sh.Serving.Members) != 3 {
		t.Errorf("journal show after a reconfiguration: %+v, serving %+v; want the placement and serving grid:1x3", sh, sh.Serving)
	}

	// The plan's journal moves onto a new machine (its matchmaker moving
	// along), and the machine left out retires.
	newcomer, err := x.cell.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	plan := x.cell.Journals[0].String()
	founders := hexIDs(x.nodeIDs(3))
	gone := founders[2]
	rc := jsonOf[reconfigureOut](x, "", "journal", "reconfigure", plan, "--members", founders[0]+","+founders[1]+","+newcomer.Addr)
	if len(rc.Members) != 3 || slices.Contains(rc.Members, gone) || rc.Quorum != "majority" || rc.ConfigBallot == "" {
		t.Errorf("journal reconfigure: %+v, want %s left out", rc, gone)
	}
	if rc.Matchmakers == nil || slices.Contains(rc.Matchmakers.Members, gone) || len(rc.Matchmakers.Members) != 3 {
		t.Errorf("journal reconfigure: the matchmakers did not move off %s: %+v", gone, rc.Matchmakers)
	}
	w := x.gcWatermark(plan, gone)
	if v := jsonOf[retireOut](x, "", "journal", "retire", plan, "--node", gone, "--gc-watermark", w); v.Node != gone || v.GCWatermark != w {
		t.Errorf("journal retire: %+v", v)
	}

	// A machine joins the pool, then drains.
	idle, err := x.cell.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	added := jsonOf[machineOut](x, "", "cell", "add-machine", idle.Addr)
	if added.Addr != idle.Addr || added.State != "up" || len(added.Node) != 16 {
		t.Errorf("cell add-machine: %+v", added)
	}
	if v := jsonOf[machineOut](x, "", "cell", "drain", added.Node); v.Node != added.Node || v.State != "draining" {
		t.Errorf("cell drain: %+v", v)
	}
	mm := jsonOf[matchmakersOut](x, "", "matchmakers", "set", strings.Join(rc.Matchmakers.Members, ","))
	if mm.Generation <= rc.Matchmakers.Generation || !slices.Equal(mm.Members, rc.Matchmakers.Members) {
		t.Errorf("matchmakers set: %+v after %+v", mm, rc.Matchmakers)
	}

	// The replica and proxy sets.
	rep, err := x.cell.AddIdleReplica()
	if err != nil {
		t.Fatal(err)
	}
	if v := jsonOf[machineSetOut](x, "", "replicas", "set", rep.Addr); !slices.Equal(v.Machines, []string{rep.Addr}) {
		t.Errorf("replicas set: %+v", v)
	}
	px, err := x.cell.AddIdleProxy()
	if err != nil {
		t.Fatal(err)
	}
	if v := jsonOf[machineSetOut](x, "", "proxies", "set", px.Addr); !slices.Equal(v.Machines, []string{px.Addr}) {
		t.Errorf("proxies set: %+v", v)
	}
	if v := jsonOf[machineSetOut](x, "", "proxies", "set", "none"); len(v.Machines) != 0 {
		t.Errorf("proxies set none: %+v", v)
	}

	// Deletions.
	if v := jsonOf[deletedOut](x, "", "journal", "delete", "shop/orders"); v.Deleted != "shop/orders" {
		t.Errorf("journal delete: %+v", v)
	}
	x.awaitGone("shop")
	if v := jsonOf[deletedOut](x, "", "tenant", "delete", "shop"); v.Deleted != "shop" {
		t.Errorf("tenant delete: %+v", v)
	}

	// A cell of its own, formed over one more idle machine.
	fresh, err := x.cell.AddIdle()
	if err != nil {
		t.Fatal(err)
	}
	if v := jsonOf[cellInitOut](x, "", "cell", "init", "--members", fresh.Addr, "--journals", "1"); len(v.Cell) != 16 || len(v.Journals) != 1 {
		t.Errorf("cell init: %+v", v)
	}

	for path := range x.documented() {
		if !x.covered[path] {
			t.Errorf("%s documents its JSON but no case here runs it", path)
		}
	}
}

// nodeIDs are the node ids of the cell's first n machines.
func (x *ctl) nodeIDs(n int) []admin.NodeID {
	x.t.Helper()
	var ids []admin.NodeID
	for i := range n {
		ids = append(ids, admin.NodeID(x.cell.Machine(i).NodeID()))
	}
	return ids
}

// documented lists the commands that document a JSON schema.
func (x *ctl) documented() map[string]bool {
	out := map[string]bool{}
	eachCommand(newRoot(), func(c *cobra.Command) {
		if c.Annotations[schemaKey] != "" {
			out[c.CommandPath()] = true
		}
	})
	return out
}

// gcWatermark polls journal inspect until the leader's garbage collection
// made node retirable, and returns the leader's watermark.
func (x *ctl) gcWatermark(ref, node string) string {
	x.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, _, code := x.run("", "journal", "inspect", ref, "-o", "json")
		var sts []inspectOut
		if code == exitOK && json.Unmarshal([]byte(out), &sts) == nil {
			for _, s := range sts {
				if s.Role == "leader" && s.GCEffective && slices.Contains(s.Retirable, node) {
					return s.GCWatermark
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	x.t.Fatalf("the leader's GC never made %s retirable", node)
	return ""
}

// awaitGone waits until tenant holds no journal (a deleted journal leaves
// the registry once its stores are removed).
func (x *ctl) awaitGone(tenant string) {
	x.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		out, _, code := x.run("", "journal", "list", "--tenant", tenant, "-o", "json")
		if code == exitOK && strings.TrimSpace(out) == "[]" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	x.t.Fatalf("tenant %s still holds journals", tenant)
}
