package main

// paros: three `paros serve` processes (built from the parent module with
// `go build`), formed into a cell with the Machine.CellInit RPC, and driven
// only through the public client library (package client): one
// client.Client for the writers, a client.Writer with the library's
// defaults per journal written, a client.Reader per tail reader, and
// Client.Inspect to find a journal's consensus leader.
//
// The harness adds nothing to the library's write path: it claims once,
// then every write is one Writer.Append of the phase's records. How the
// appends in flight travel (coalesced into writes, pipelined over one
// WriteStream to the leader, resent after an ambiguous reply, redirected
// after NotLeader) is the library's business, and is what is measured.
// Cell formation (machine.InitCell, over the generated Machine stubs) is
// the one thing the library does not cover.
//
// The headline system ("paros") runs as shipped: secure. Before the
// members start, the harness makes the cell's credentials with the shipped
// `paros cert` commands (a CA, one machine certificate per member for
// 127.0.0.1, an admin token for cell formation and a read/write token for
// the load generator); each member serves TLS 1.3 and checks tokens
// (`paros serve --tls DIR`), the members speak mutual TLS to one another,
// and every client.Client dials with client.WithCAFile and
// client.WithToken. The variant "paros (plaintext)" (`--insecure`, no
// token) runs W1 and W2 only, to measure what the security costs. The etcd
// and NATS members run plaintext without authentication. The variant
// "paros (2 replicas)" is the headline system plus two replica machines
// (`serve --role replica`, named at cell init); see replicas.go. The
// variant "paros (2 proxies)" is the headline system plus two proxy leaders
// (`serve --role proxy`, named at cell init), run on W2 only; see
// proxies.go.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// parosJournals is how many journals cell init creates (its maximum):
// journal 0 carries W1, W2, W3 and W5; journal 1 carries the W4 tail;
// journal 2 the read-heavy rows (readheavy.go); the W2 "64 journals"
// variant writes all 64.
const parosJournals = 64

type parosSys struct {
	root string // the parent module (where `go build` runs)
	bin  string
	// secure: TLS 1.3 and tokens (`serve --tls`), as shipped; false is
	// the plaintext variant (`serve --insecure`, no token).
	secure bool
	creds  *parosCreds // secure only: made by start
	addrs  []string
	pprof  []string
	procs  []*child
	// replicas is how many replica machines the cell has (0: none);
	// raddrs, rpprof and rprocs are theirs, metrics every process's
	// /metrics address (the members, then the replicas, then the proxies).
	replicas int
	raddrs   []string
	rpprof   []string
	rprocs   []*child
	metrics  []string
	// proxies is how many proxy leaders the cell has (0: none); paddrs,
	// ppprof and pprocs are theirs (their /metrics addresses follow the
	// replicas' in metrics).
	proxies int
	paddrs  []string
	ppprof  []string
	pprocs  []*child
	cl      *client.Client // the writers' Client
	jids    []journal.ID
	// journals is how many journals cell init creates (0: parosJournals).
	// Only the scale rows (scale.go) set it: their cells are formed for
	// the size of each row, and they wait for the journals' leaders
	// themselves, in parallel.
	journals int
	// margs and mlogs are each member's `paros serve` arguments and log
	// file, so that a member can be restarted on its data dir.
	margs [][]string
	mlogs []string
	// tokens are the extra read/write tokens of the scale rows' Clients,
	// one principal each (scale_paros.go).
	tokens []string

	// statsMu guards last: the Writer counters of the writer closed last
	// (read by runSystem after each phase).
	statsMu sync.Mutex
	last    writerStats
}

// writerStats is what the client.Writers of one phase did
// (client.WriterStats summed over the phase's Writers, warm-up included).
type writerStats struct {
	Writers   int    `json:"writers"`
	Appends   uint64 `json:"appends"`
	Writes    uint64 `json:"writes"`
	Sends     uint64 `json:"sends"`
	Refused   uint64 `json:"refused"`
	Ambiguous uint64 `json:"ambiguous"`
	Unsent    uint64 `json:"unsent"`
	// ReplicaCPUCores is the replica machines' CPU over the phase (from
	// the claim to the close of its Writers), in cores; 0 without
	// replicas.
	ReplicaCPUCores float64 `json:"replicas_cpu_cores,omitempty"`
}

func (a *writerStats) add(s client.WriterStats) {
	a.Writers++
	a.Appends += s.Appends
	a.Writes += s.Writes
	a.Sends += s.Sends
	a.Refused += s.Refused
	a.Ambiguous += s.Ambiguous
	a.Unsent += s.Unsent
}

// parosCreds are a secure cell's credentials, made with `paros cert`.
type parosCreds struct {
	caFile   string   // DIR/certs/ca/ca.crt
	nodeDirs []string // per member, then per replica, then per proxy: ca.crt, node.crt, node.key (serve --tls)
	admin    string   // read, write, admin over every journal: cell formation
	client   string   // read, write over every journal: the load generator
}

// newParos is the paros system: secure (TLS 1.3 + tokens, as shipped) or
// the plaintext variant.
func newParos(root string, secure bool) *parosSys { return &parosSys{root: root, secure: secure} }

func (s *parosSys) key() string {
	if s.journals > 0 {
		return "paros-scale"
	}
	if s.proxies > 0 {
		return "paros-proxies"
	}
	if s.replicas > 0 {
		return "paros-replicas"
	}
	if s.secure {
		return "paros"
	}
	return "paros-plaintext"
}

func (s *parosSys) title() string {
	if s.journals > 0 {
		return fmt.Sprintf("paros (%s journals)", thousands(float64(s.journals)))
	}
	if s.proxies > 0 {
		return fmt.Sprintf("paros (%d proxies)", s.proxies)
	}
	if s.replicas > 0 {
		return fmt.Sprintf("paros (%d replicas)", s.replicas)
	}
	if s.secure {
		return "paros"
	}
	return "paros (plaintext)"
}

func (s *parosSys) durability() string {
	d := "default: every batch is fsynced (one synced Pebble commit per group of batches) on a majority before the client is answered"
	if s.replicas > 0 {
		d += fmt.Sprintf("; TLS 1.3 and tokens as in paros; %d replica machines learn every journal but never vote, so they add nothing to an acknowledgement", s.replicas)
		return d
	}
	if s.proxies > 0 {
		return d + fmt.Sprintf("; TLS 1.3 and tokens as in paros; the settled leader hands the Phase 2 of slot s to proxy leader s %% %d, which fans the Accepts out and announces the decision: proxies vote on nothing and persist nothing, so the acknowledgement still waits for a synced majority of the members (W2 only)", s.proxies)
	}
	if s.secure {
		return d + "; TLS 1.3 (mutual between members) and a bearer token on every call, the default"
	}
	return d + "; `--insecure`: plaintext, no authentication (TLS-cost comparison only)"
}

// tlsCostOnly: the plaintext variant runs only the phases the TLS-cost
// comparison needs (W1, W2 with one Writer).
func (s *parosSys) tlsCostOnly() bool { return !s.secure }
func (s *parosSys) members() []*child { return s.procs }

// build compiles `paros` from the parent module into dir.
func (s *parosSys) build(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		return err
	}
	s.bin = filepath.Join(dir, "bin", "paros")
	cmd := exec.Command("go", "build", "-o", s.bin, "github.com/parosdb/paros/cmd/paros")
	cmd.Dir = s.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build paros: %v\n%s", err, out)
	}
	return nil
}

func (s *parosSys) start(ctx context.Context, dir string) error {
	if s.bin == "" {
		if err := s.build(dir); err != nil {
			return err
		}
	}
	// Per process (the members, then the replicas, then the proxies): the
	// listen, pprof and metrics addresses.
	n := 3 + s.replicas + s.proxies
	ports, err := freePorts(3 * n)
	if err != nil {
		return err
	}
	for i := range n {
		a, p := fmt.Sprintf("127.0.0.1:%d", ports[i]), fmt.Sprintf("127.0.0.1:%d", ports[n+i])
		switch {
		case i < 3:
			s.addrs, s.pprof = append(s.addrs, a), append(s.pprof, p)
		case i < 3+s.replicas:
			s.raddrs, s.rpprof = append(s.raddrs, a), append(s.rpprof, p)
		default:
			s.paddrs, s.ppprof = append(s.paddrs, a), append(s.ppprof, p)
		}
		s.metrics = append(s.metrics, fmt.Sprintf("127.0.0.1:%d", ports[2*n+i]))
	}
	if s.secure {
		if s.creds, err = s.makeCreds(ctx, filepath.Join(dir, "certs")); err != nil {
			return err
		}
	}
	for i := range 3 {
		data := filepath.Join(dir, fmt.Sprintf("paros-m%d", i+1))
		sec := []string{"--insecure"}
		if s.secure {
			sec = []string{"--tls", s.creds.nodeDirs[i]}
		}
		args := append([]string{"serve"}, sec...)
		args = append(args, "--data", data, "--listen", s.addrs[i], "--pprof", s.pprof[i], "--metrics", s.metrics[i])
		c, err := startChild(fmt.Sprintf("%s-m%d", s.key(), i+1), data+".log", s.bin, args...)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, c)
		s.margs, s.mlogs = append(s.margs, args), append(s.mlogs, data+".log")
	}
	if err := s.startReplicas(dir); err != nil {
		return err
	}
	if err := s.startProxies(dir); err != nil {
		return err
	}
	for _, a := range slices.Concat(s.addrs, s.raddrs, s.paddrs) {
		if err := waitTCP(a, 20*time.Second); err != nil {
			return err
		}
	}
	// Cell formation: the CellInit RPC (what `parosctl cell init` does); the
	// client library has no call for it. A secure cell needs TLS trusting
	// its CA and the admin token.
	access := machine.Access{}
	if s.secure {
		tc, err := security.ClientConfigFile(s.creds.caFile)
		if err != nil {
			return err
		}
		access = machine.Access{TLS: tc, Token: s.creds.admin}
	}
	journals, initWait := parosJournals, 60*time.Second
	if s.journals > 0 {
		journals, initWait = s.journals, scaleBudget(s.journals)
	}
	ictx, cancel := context.WithTimeout(ctx, initWait)
	plan, err := machine.InitCellWith(ictx, s.addrs[0], &pb.CellInitRequest{Members: s.addrs, Replicas: s.raddrs,
		Proxies: s.paddrs, Journals: uint32(journals)}, access)
	cancel()
	if err != nil {
		return fmt.Errorf("paros: cell init of %d journals (waited up to %v): %w", journals, initWait, err)
	}
	for _, j := range plan.GetJournals() {
		s.jids = append(s.jids, wire.JournalIDFromPB(j))
	}
	if s.journals > 0 {
		if len(s.jids) != s.journals {
			return fmt.Errorf("paros: cell init created %d journals, asked for %d", len(s.jids), s.journals)
		}
	} else if len(s.jids) <= readHeavyJournal {
		return fmt.Errorf("paros: cell init created %d journals, the bench needs at least %d", len(s.jids), readHeavyJournal+1)
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	s.cl, err = client.Dial(dctx, s.addrs, s.clientOpts()...)
	cancel()
	if err != nil {
		return err
	}
	if s.journals > 0 {
		return nil // the scale rows wait for the leaders themselves
	}
	// Wait until every journal has a consensus leader, and every replica
	// serves reads.
	for j := range s.jids {
		if _, err := s.leaderOf(ctx, j, 30*time.Second); err != nil {
			return err
		}
	}
	return s.waitReplicasServe(ctx, 30*time.Second)
}

// clientOpts are the options every client.Client of the harness dials
// with: on the secure cell, TLS trusting only the cell's CA and the load
// generator's token; on the plaintext variant, none (WithInsecure).
func (s *parosSys) clientOpts() []client.Option {
	if !s.secure {
		return []client.Option{client.WithInsecure()}
	}
	return []client.Option{client.WithCAFile(s.creds.caFile), client.WithToken(s.creds.client)}
}

// leaderOf is the index of the live member that reports itself the
// consensus leader of journal j (admin.Client.Inspect), waiting up to wait.
func (s *parosSys) leaderOf(ctx context.Context, j int, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		sts := admin.New(s.cl).Inspect(ictx, s.jids[j])
		cancel()
		for _, st := range sts {
			i := s.memberIndex(st.Addr)
			if st.Err == nil && st.Role == "leader" && i >= 0 && s.procs[i].alive() {
				return i, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return -1, fmt.Errorf("paros: no leader for journal %s after %v", s.jids[j], wait)
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// memberIndex maps a server address to its member (-1: none).
func (s *parosSys) memberIndex(addr string) int {
	for i, a := range s.addrs {
		if a == addr {
			return i
		}
	}
	return -1
}

func (s *parosSys) leader(ctx context.Context) (int, error) {
	return s.leaderOf(ctx, 0, 10*time.Second)
}

func (s *parosSys) kill(i int) { s.procs[i].kill() }

// pprofAddr is member i's pprof address; past the members, replica
// i-3's.
func (s *parosSys) pprofAddr(i int) string {
	if i >= len(s.pprof) {
		return s.rpprof[i-len(s.pprof)]
	}
	return s.pprof[i]
}

func (s *parosSys) stop() {
	if s.cl != nil {
		_ = s.cl.Close()
	}
	for _, p := range s.allProcs() {
		p.kill()
	}
}

// takeStats returns the Writer counters of the writer closed last, and
// forgets them.
func (s *parosSys) takeStats() writerStats {
	s.statsMu.Lock()
	defer s.statsMu.Unlock()
	st := s.last
	s.last = writerStats{}
	return st
}

// parosWriter is the harness's paros writer: a client.Writer with the
// library's defaults on each of its journals (one for every phase but the
// "64 journals" variant), claimed once when it opens. Every write is one
// Append; the load driver's goroutines are the appends in flight.
type parosWriter struct {
	s    *parosSys
	ws   []*client.Writer
	next atomic.Uint64 // round robin over ws
	// opened and rcpu are when the writer opened and the replicas' CPU
	// time then.
	opened time.Time
	rcpu   time.Duration
}

// newWriter opens a Writer on journal 0. inflight is how many goroutines
// will append at once, each with one append outstanding.
func (s *parosSys) newWriter(ctx context.Context, inflight int, _ time.Duration) (writer, error) {
	return s.openWriter(ctx, inflight, 1)
}

// tailWriter opens a Writer on journal 1 (W4 keeps at most 64 appends in
// flight).
func (s *parosSys) tailWriter(ctx context.Context) (writer, error) {
	w, err := s.claim(ctx, []int{1}, 64)
	if err != nil {
		return nil, err
	}
	return w, nil
}

// openWriter opens one Writer on each of the first `journals` journals,
// over the one Client; writes go to them round robin.
func (s *parosSys) openWriter(ctx context.Context, inflight, journals int) (writer, error) {
	js := make([]int, min(journals, len(s.jids)))
	for j := range js {
		js[j] = j
	}
	w, err := s.claim(ctx, js, inflight)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return w, nil
}

// claim opens a Writer with the library's defaults on each journal in js
// and claims it (taking it over from an earlier phase's Writer).
func (s *parosSys) claim(ctx context.Context, js []int, inflight int) (*parosWriter, error) {
	// Each goroutine of the load driver has one append outstanding, so a
	// Writer never has more than inflight outstanding. Past the default
	// window (sansio.DefaultWindow) AppendAsync would wait for room, and
	// the phase would measure the window, not the load.
	if inflight > sansio.DefaultWindow {
		panic(fmt.Sprintf("bench: %d appends in flight exceed the Writer's default window of %d", inflight, sansio.DefaultWindow))
	}
	w := &parosWriter{s: s, opened: time.Now(), rcpu: membersCPU(s.rprocs)}
	for _, j := range js {
		cw := s.cl.Journal(s.jids[j]).NewWriter()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cw.Claim(cctx)
		cancel()
		if err != nil {
			_ = cw.Close()
			w.close()
			return nil, fmt.Errorf("paros: claim journal %s: %w", s.jids[j], err)
		}
		w.ws = append(w.ws, cw)
	}
	return w, nil
}

// write appends recs with one Writer.Append and returns when a majority
// has them durably. It returns the time the append was handed to the
// library: the library resends internally and does not say when the
// attempt that landed left, so this is the earliest time the successful
// attempt can have been sent. An error from a Writer that stopped
// (superseded, or out of attempts) wraps errStopped: every later append
// would fail the same way.
func (w *parosWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	cw := w.ws[0]
	if len(w.ws) > 1 {
		cw = w.ws[w.next.Add(1)%uint64(len(w.ws))]
	}
	at := time.Now()
	if _, err := cw.Append(ctx, recs...); err != nil {
		if cw.Stopped() != nil {
			return time.Time{}, fmt.Errorf("%w: %w", errStopped, err)
		}
		return time.Time{}, err
	}
	return at, nil
}

// close closes every Writer and keeps their summed counters for
// takeStats.
func (w *parosWriter) close() {
	var st writerStats
	for _, cw := range w.ws {
		st.add(cw.Stats())
		_ = cw.Close()
	}
	if len(w.s.rprocs) > 0 {
		st.ReplicaCPUCores = (membersCPU(w.s.rprocs) - w.rcpu).Seconds() / time.Since(w.opened).Seconds()
	}
	w.s.statsMu.Lock()
	w.s.last = st
	w.s.statsMu.Unlock()
}

// subscribe follows the tail of journal 1 with a client.Reader. Each
// reader has its own Client whose address list starts at a different
// member (and, with replicas, at a different replica: the library reads
// from the replicas first), so the readers' first reads go to different
// servers; where a reader reads after that is the library's choice.
func (s *parosSys) subscribe(ctx context.Context, reader int, ready func(), fn func(rec []byte)) error {
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	cl, err := client.Dial(dctx, s.readerAddrs(reader), s.clientOpts()...)
	cancel()
	if err != nil {
		return err
	}
	defer cl.Close()
	j := cl.Journal(s.jids[1])
	// Start at the current tail: a read far past it is served empty, with
	// the journal's view.
	var from journal.Seq
	for from == 0 {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		page, err := j.Read(rctx, journal.ReadRequest{FromSeq: 1 << 62, Limit: 1})
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil && page.Served:
			from = page.View.NextSeq
		case err == nil && page.UnknownJournal:
			return fmt.Errorf("paros reader: %w: %s", client.ErrUnknownJournal, s.jids[1])
		default:
			sleepCtx(ctx, 10*time.Millisecond)
		}
	}
	rd := j.NewReader(from)
	ready()
	for rec, err := range rd.Records(ctx) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var gap *client.GapError
			if errors.As(err, &gap) {
				return fmt.Errorf("paros reader: unexpected gap: %w", err)
			}
			return err
		}
		fn(rec.Data)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
