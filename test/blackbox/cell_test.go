// Package blackbox tests paros as a user runs it: real `paros serve`
// processes on 127.0.0.1, formed with `parosctl cell init`, driven through the
// client library (package client) and the CLI, and killed with SIGKILL.
//
// What it checks:
//   - a write/read/truncate/claim round trip through parosctl (the write
//     fence rule: another user is refused until --take-over), and a
//     read below the floor reported as a gap;
//   - kill -9 of the leader under a concurrent write load: the cell fails
//     over, every acknowledged write stays readable with its bytes, and the
//     whole client history (writes and reads, ambiguous ones included) is
//     linearizable (sim/lincheck's journal checker, with porcupine as a
//     second opinion); the failover time is logged. It calls the journal through a client.Journal handle's raw
//     calls (Write, Read, SetLeader follow NotLeader hints and ask the
//     other servers, and return ambiguous replies as they are), records
//     every reply they return, ambiguous ones as ambiguous, and finds the
//     leader with client.Inspect;
//   - a restart whose journal store was deleted is refused as amnesia with
//     exit code 78;
//   - a restart under an edited machine record (another cell plan) is
//     refused, and so is a restart under another machine's certificate;
//   - the credentials are required: `paros serve` without --tls or
//     --insecure and parosctl without a CA refuse to run (exit 2), and a
//     parosctl without a token is refused by the cell (exit 3).
//
// Every cell runs as shipped by default, secure: the test makes a CA with
// `paros cert ca`, each machine's credentials with `paros cert node`, and an
// admin token with `paros cert token`; each machine serves with --tls, and
// parosctl and the client library dial with the CA and present the token.
package blackbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/sim/lincheck"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "paros-blackbox-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	for _, b := range []string{"paros", "parosctl"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, b), "github.com/parosdb/paros/cmd/"+b).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type proc struct {
	addr, data string
	// advertise is the address peers and clients use (empty: addr).
	advertise string
	// creds is the machine's credentials dir (ca.crt, node.crt, node.key)
	// passed to --tls; empty serves --insecure.
	creds string
	// bin is the paros binary to run (empty: the shipped build in binDir);
	// args are extra flags for serve.
	bin    string
	args   []string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
	// exited is closed when the process has exited (done then holds its
	// error until one receive takes it).
	exited chan struct{}
}

type cell struct {
	t     *testing.T
	procs []*proc
	// caDir holds the cell's CA (ca.crt and its key), caFile its ca.crt;
	// token is an admin token (every journal: read, write, admin).
	caDir, caFile, token string
	// cache is parosctl's XDG_CACHE_HOME (its fence book): the test's
	// own, as one user.
	cache string
}

func (c *cell) start(p *proc) {
	p.stderr = &bytes.Buffer{}
	args := []string{"serve", "--data", p.data, "--listen", p.addr}
	if p.advertise != "" {
		args = append(args, "--advertise", p.advertise)
	}
	if p.creds != "" {
		args = append(args, "--tls", p.creds)
	} else {
		args = append(args, "--insecure")
	}
	bin := filepath.Join(binDir, "paros")
	if p.bin != "" {
		bin = p.bin
	}
	p.cmd = exec.Command(bin, append(args, p.args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p.done = make(chan error, 1)
	p.exited = make(chan struct{})
	go func() {
		err := p.cmd.Wait()
		close(p.exited)
		p.done <- err
	}()
}

// awaitListening waits until every process accepts connections on its
// listen address. A loaded machine (the race detector, parallel packages
// on two cores) can take seconds to start one; a process that exits
// instead fails the test with its stderr, so a port clash or a refused
// data dir reads as what it is, not as an unreachable member.
func (c *cell) awaitListening() {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for i, p := range c.procs {
		for {
			select {
			case <-p.exited:
				c.t.Fatalf("machine %d (%s) exited before it listened: %s", i+1, p.addr, p.stderr)
			default:
			}
			conn, err := net.DialTimeout("tcp", p.addr, time.Second)
			if err == nil {
				conn.Close()
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("machine %d (%s) not listening after a minute: %v", i+1, p.addr, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// paros runs the paros binary (a cert command) and returns its stdout; the
// test fails if it fails.
func (c *cell) paros(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "paros"), args...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("paros %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(string(out))
}

// makePKI makes the cell's CA in base/pki/ca and an admin token.
func (c *cell) makePKI(base string) {
	c.caDir = filepath.Join(base, "pki", "ca")
	c.caFile = filepath.Join(c.caDir, security.CACertFile)
	c.paros("cert", "ca", "--dir", c.caDir)
	c.token = c.paros("cert", "token", "--ca", c.caDir, "--subject", "blackbox", "--all", "--ops", "read,write,admin", "--ttl", "1h")
}

// issue makes p's machine credentials in dir with `paros cert node`, valid
// for the hosts of its listen and advertised addresses, and returns its
// node id.
func (c *cell) issue(p *proc, dir string) uint64 {
	c.t.Helper()
	hosts := []string{"localhost"}
	for _, a := range []string{p.addr, p.advertise} {
		if h, _, err := net.SplitHostPort(a); err == nil {
			hosts = append(hosts, h)
		}
	}
	out := c.paros("cert", "node", "--ca", c.caDir, "--out", dir, "--host", strings.Join(hosts, ","))
	id, err := strconv.ParseUint(out, 16, 64)
	if err != nil {
		c.t.Fatalf("paros cert node printed %q", out)
	}
	p.creds = dir
	return id
}

func newCell(t *testing.T) *cell { return newCellWith(t, nil) }

// newCellWith starts three secure machines; shape, when set, adjusts each
// one (its advertised address, say) before its certificate is issued and it
// starts.
func newCellWith(t *testing.T, shape func(i int, p *proc)) *cell { return newCellOf(t, 3, shape) }

// newCellOf starts n secure machines, shaped as newCellWith's.
func newCellOf(t *testing.T, n int, shape func(i int, p *proc)) *cell {
	c := &cell{t: t}
	base := t.TempDir()
	c.makePKI(base)
	for i := range n {
		p := &proc{addr: freeAddr(t), data: filepath.Join(base, fmt.Sprintf("m%d", i+1))}
		if shape != nil {
			shape(i, p)
		}
		c.issue(p, filepath.Join(base, "pki", fmt.Sprintf("m%d", i+1)))
		c.start(p)
		c.procs = append(c.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	})
	return c
}

// node loads p's machine credentials.
func (c *cell) node(p *proc) *security.Node {
	c.t.Helper()
	n, err := security.LoadNode(p.creds)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// peerConn dials machine to as machine as would: mutual TLS presenting as's
// certificate and requiring to's (its listen address, past any proxy). A
// hostile test plays a member gone rogue with it.
func (c *cell) peerConn(to, as *proc) *grpc.ClientConn {
	c.t.Helper()
	creds := credentials.NewTLS(c.node(as).PeerConfig(c.node(to).NodeID))
	conn, err := grpc.NewClient(to.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

// clientOptions are the client.Dial options that get into the cell: its
// CA and the admin token.
func (c *cell) clientOptions() []client.Option {
	return []client.Option{client.WithCAFile(c.caFile), client.WithToken(c.token)}
}

// public is the address the cell plan names for p: its advertised one.
func (p *proc) public() string {
	if p.advertise != "" {
		return p.advertise
	}
	return p.addr
}

func (c *cell) servers() string {
	var a []string
	for _, p := range c.procs {
		a = append(a, p.public())
	}
	return strings.Join(a, ",")
}

// ctl runs parosctl with the cell's CA (PAROSCTL_CA) and admin token
// (--token) and returns its output and exit code.
func (c *cell) ctl(args ...string) (string, int) {
	return c.ctlEnv([]string{"PAROSCTL_CA=" + c.caFile}, append([]string{"--token", c.token}, args...)...)
}

// ctlEnv runs parosctl with --servers, the environment variables env and
// no other PAROSCTL_ variable, and returns its output and exit code. Its
// fence book is the test's (XDG_CACHE_HOME), unless env names another.
func (c *cell) ctlEnv(env []string, args ...string) (string, int) {
	cmd := exec.Command(filepath.Join(binDir, "parosctl"), append([]string{"--servers", c.servers()}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PAROSCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if c.cache == "" {
		c.cache = c.t.TempDir()
	}
	cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+c.cache)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return string(out), code
}

// initCell forms the cell and returns its journal reference.
func (c *cell) initCell() string { return c.initArgs("--members", c.servers()) }

// initArgs runs parosctl cell init with args and one journal and returns the
// journal reference.
func (c *cell) initArgs(args ...string) string {
	c.t.Helper()
	out := c.form(append(args, "--journals", "1")...)
	_, j, _ := strings.Cut(strings.TrimSpace(out), "journals=")
	return j
}

// form runs parosctl cell init with args once every machine listens, retrying
// while a member may still be opening its store, and returns its output;
// the test fails if init never succeeds.
func (c *cell) form(args ...string) string {
	c.t.Helper()
	c.awaitListening()
	var out string
	var code int
	for range 50 {
		if out, code = c.ctl(append([]string{"cell", "init"}, args...)...); code == 0 {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("init %s: exit %d: %s", strings.Join(args, " "), code, out)
	return ""
}

// dial returns a Client of the machines ps, dialled at their public
// addresses in ps order (the order of its Servers and of Inspect's
// answers), closed when the test ends.
func (c *cell) dial(ctx context.Context, ps []*proc) *client.Client {
	var addrs []string
	for _, p := range ps {
		addrs = append(addrs, p.public())
	}
	conn, err := client.Dial(ctx, addrs, c.clientOptions()...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { conn.Close() })
	return conn
}

// mustID parses the journal reference parosctl cell init printed.
func mustID(t *testing.T, ref string) journal.ID {
	t.Helper()
	id, err := journal.ParseID(ref)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// callTimeout bounds one raw call of the kill-the-leader test; within it
// the library asks the servers again (an election, a dead server).
const callTimeout = 5 * time.Second

func callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeout)
}

// claim sends SetLeader(u) and records it. It reports whether u holds the
// journal: LeaderSet, or LeaderRefused naming u itself (an earlier
// attempt whose reply was ambiguous won).
func claim(ctx context.Context, j *client.Journal, rec *recorder, u journal.LeaderUUID) bool {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	start := time.Now()
	reply, err := j.SetLeader(cctx, journal.SetLeaderRequest{New: u})
	in := lincheck.Input{Kind: lincheck.OpSetLeader, Cmd: journal.SetLeader(u, journal.LeaderUUID{})}
	if err != nil {
		// No server answered. The library says nothing was sent; the
		// history does not lean on it.
		rec.add(historyClaimer, in, lincheck.Output{Ambiguous: true}, start)
		return false
	}
	rec.add(historyClaimer, in, output(reply), start)
	switch reply.Outcome.Kind {
	case journal.LeaderSet:
		return true
	case journal.LeaderRefused:
		return reply.Outcome.View.Leader == u
	}
	return false
}

// output is the history's record of a reply: ambiguous, of no effect (a
// refusal before any slot), or a verdict.
func output(r journal.Reply) lincheck.Output {
	switch {
	case r.Ambiguous():
		return lincheck.Output{Ambiguous: true}
	case r.Outcome.Kind == journal.OutcomeInvalid:
		return lincheck.Output{NoEffect: true}
	}
	return lincheck.Output{Outcome: r.Outcome}
}

// write sends req and records it. It returns the verdict, or false when
// the reply has none (ambiguous, or refused before any slot): the caller
// resends req identically.
func write(ctx context.Context, j *client.Journal, rec *recorder, req journal.WriteRequest) (journal.Outcome, bool) {
	cctx, cancel := callCtx(ctx)
	defer cancel()
	start := time.Now()
	reply, err := j.Write(cctx, req)
	in := lincheck.Input{Kind: lincheck.OpWrite, Cmd: journal.Write(journal.Entry{Leader: req.Leader, Seq: req.Seq, Records: req.Records})}
	if err != nil {
		// As in claim: recorded ambiguous, whatever the library says.
		rec.add(historyWriter, in, lincheck.Output{Ambiguous: true}, start)
		return journal.Outcome{}, false
	}
	rec.add(historyWriter, in, output(reply), start)
	if reply.Outcome.Kind == journal.OutcomeInvalid || reply.Outcome.Kind == journal.Unheld {
		return journal.Outcome{}, false
	}
	return reply.Outcome, true
}

// readAll reads j from its first position up to end, recording every
// served page, and returns the records by position. It gives up after
// 20 s; the caller finds what is missing.
func readAll(ctx context.Context, j *client.Journal, rec *recorder, end journal.Seq) map[journal.Seq][]byte {
	got := map[journal.Seq][]byte{}
	from := journal.FirstSeq
	deadline := time.Now().Add(20 * time.Second)
	for from < end && time.Now().Before(deadline) {
		cctx, cancel := callCtx(ctx)
		start := time.Now()
		rr, err := j.Read(cctx, journal.ReadRequest{FromSeq: from})
		cancel()
		if err != nil || !rr.Served || rr.UnknownJournal {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		out := lincheck.Output{Served: true, BelowFloor: rr.BelowFloor, View: rr.View}
		for _, b := range rr.Records {
			out.Records = append(out.Records, lincheck.RecordPrint(b))
		}
		rec.add(historyReader, lincheck.Input{Kind: lincheck.OpRead, From: from}, out, start)
		for k, b := range rr.Records {
			got[from+journal.Seq(k)] = b
		}
		from += journal.Seq(len(rr.Records))
	}
	return got
}
