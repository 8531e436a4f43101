package main

// The paros side of the scale rows (scale.go): finding every journal's
// leader, claiming a Writer per journal, W2 over N journals, the restart
// of a member and the failover of the member that leads the most
// journals. Everything goes through the public client library: Inspect
// for the leaders and for the restarted member's first answer,
// client.Writer for every write, Journal.Read for the reads.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// scaleWritersPerClient is how many Writers one client.Client carries:
// all of them, as one process of a user would. A Client shares one
// WriteStream per member among its Writers, so a thousand Writers hold
// three streams, well under a member's bound on one token's streams
// (server.WriteStreamsPerPrincipalMax).
const scaleWritersPerClient = 1000

// scaleFailoverClients is how many client.Clients carry the failover's
// Writers (scaleWorkers journals written at once).
const scaleFailoverClients = 1

// scaleCounterNames are the counters of the members' /metrics a W2 or
// failover row keeps, summed over the members, as what changed over the
// row: elections won, and consensus messages dropped on a full inbox or
// a full peer queue. They say why a row went slowly.
var scaleCounterNames = []string{"paros_elections", "paros_inbound_dropped_total", "paros_outbound_dropped_total"}

// memberCounters reads scaleCounterNames from each member's /metrics (nil
// for a member that does not answer).
func (s *parosSys) memberCounters() []map[string]float64 {
	out := make([]map[string]float64, len(s.procs))
	for i := range s.procs {
		if s.procs[i].alive() {
			out[i] = scrapeNames(s.metrics[i], scaleCounterNames)
		}
	}
	return out
}

// countersDelta sums after − before over the members that answered both
// times.
func countersDelta(before, after []map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for i := range before {
		if before[i] == nil || after[i] == nil {
			continue
		}
		for k, v := range after[i] {
			out[k] += v - before[i][k]
		}
	}
	return out
}

// scrapeNames reads the series of the named metrics from the /metrics at
// addr, keyed by name (labels summed).
func scrapeNames(addr string, names []string) map[string]float64 {
	all := scrapeSeries(addr)
	if all == nil {
		return nil
	}
	out := map[string]float64{}
	for series, v := range all {
		if name, _, _ := strings.Cut(series, "{"); slices.Contains(names, name) {
			out[name] += v
		}
	}
	return out
}

// scaleRestart is the restart row.
type scaleRestart struct {
	Member string `json:"member,omitempty"`
	// InspectMs: from the restart (the process started) until the member
	// answered Inspect with its cell (client.Client.Inspect, through a
	// Client of that member alone); InspectJournals the journals it
	// named then.
	InspectMs       float64 `json:"inspect_ms,omitempty"`
	InspectJournals int     `json:"inspect_journals,omitempty"`
	// Read is how many journals served a read (Journal.Read through a
	// Client of that member alone) within the budget; AllReadMs when the
	// last did, from the restart; ReadP50Ms and ReadP99Ms over journals.
	Readers    int     `json:"readers,omitempty"`
	Read       int     `json:"journals_read,omitempty"`
	AllReadMs  float64 `json:"all_read_ms,omitempty"`
	ReadP50Ms  float64 `json:"read_p50_ms,omitempty"`
	ReadP99Ms  float64 `json:"read_p99_ms,omitempty"`
	Retries    int     `json:"read_retries,omitempty"`
	FirstRetry string  `json:"first_retry_reason,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// scaleFailover is the failover row.
type scaleFailover struct {
	Killed string `json:"killed,omitempty"`
	// KilledLed is how many journals the killed member led (Inspect, just
	// before the kill); LeadersBefore the count of every member.
	KilledLed     int   `json:"killed_led,omitempty"`
	LeadersBefore []int `json:"leaders_before,omitempty"`
	// ClaimS is how long claiming a Writer on every journal took, before
	// the kill.
	ClaimS  float64 `json:"claim_s,omitempty"`
	Workers int     `json:"workers,omitempty"`
	// Acked is how many journals acknowledged an append within the
	// budget. LastAckMs, P50Ms and P99Ms: from the kill to each journal's
	// first acknowledgement, the last one and over journals; Led… the
	// same over the journals the killed member led; Call… from each
	// journal's first Append call to its acknowledgement.
	Acked      int     `json:"journals_acked,omitempty"`
	LastAckMs  float64 `json:"last_ack_ms,omitempty"`
	P50Ms      float64 `json:"p50_ms,omitempty"`
	P99Ms      float64 `json:"p99_ms,omitempty"`
	LedLastMs  float64 `json:"led_last_ms,omitempty"`
	LedP50Ms   float64 `json:"led_p50_ms,omitempty"`
	LedP99Ms   float64 `json:"led_p99_ms,omitempty"`
	CallP50Ms  float64 `json:"call_p50_ms,omitempty"`
	CallP99Ms  float64 `json:"call_p99_ms,omitempty"`
	Retries    int     `json:"retries,omitempty"`
	FirstRetry string  `json:"first_retry_reason,omitempty"`
	// Counters: scaleCounterNames over the surviving members, from just
	// before the kill to the last acknowledgement.
	Counters map[string]float64 `json:"members_counters_delta,omitempty"`
	Error    string             `json:"error,omitempty"`
}

// appendOnce appends one record to journal j with *wp (claimed over cl),
// trying again until it is acknowledged or ctx ends; a Writer that
// stopped is replaced by a new claim. It closes the Writer once its
// append is acknowledged, which closes its WriteStream.
func (s *parosSys) appendOnce(ctx context.Context, cl *client.Client, j int, wp **client.Writer, filler []byte, deadline time.Time, retries *firstError) bool {
	defer func() {
		if *wp != nil {
			_ = (*wp).Close()
			*wp = nil
		}
	}()
	for ctx.Err() == nil {
		if w := *wp; w == nil || w.Stopped() != nil {
			if w != nil {
				_ = w.Close()
				*wp = nil
			}
			nw, err := claimUntil(ctx, cl.Journal(s.jids[j]), deadline)
			if err != nil {
				retries.add(fmt.Errorf("claim again: %w", err))
				continue
			}
			*wp = nw
		}
		if _, err := (*wp).Append(ctx, makeRecords(1, filler)[0]); err != nil {
			retries.add(err)
			sleepCtx(ctx, 10*time.Millisecond)
			continue
		}
		return true
	}
	return false
}

// surveyLeaders finds every journal's consensus leader with
// Client.Inspect (scaleSurveyors journals at once), asking again for the
// journals without one until wait has passed. It returns the leading
// member of each journal (-1: none found) and an error when some journal
// had none.
func (s *parosSys) surveyLeaders(ctx context.Context, wait time.Duration) ([]int, error) {
	deadline := time.Now().Add(wait)
	lead := make([]int, len(s.jids))
	todo := make([]int, len(s.jids))
	for j := range todo {
		todo[j] = j
	}
	for {
		forEach(ctx, len(todo), scaleSurveyors, func(k int) { lead[todo[k]] = s.inspectLeader(ctx, todo[k]) })
		todo = todo[:0]
		for j, l := range lead {
			if l < 0 {
				todo = append(todo, j)
			}
		}
		if len(todo) == 0 {
			return lead, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return lead, fmt.Errorf("paros: %d of %d journals had no leader after %v (Inspect of every member)", len(todo), len(lead), wait)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
}

// inspectLeader is the live member that reports itself leader of journal
// j, the one with the highest promised ballot if several do (-1: none).
func (s *parosSys) inspectLeader(ctx context.Context, j int) int {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	best, bb := -1, admin.Ballot{}
	for _, st := range admin.New(s.cl).Inspect(ictx, s.jids[j]) {
		i := s.memberIndex(st.Addr)
		b := st.Promised
		if st.Err == nil && st.Role == "leader" && i >= 0 && s.procs[i].alive() && (best < 0 || bb.Less(b)) {
			best, bb = i, b
		}
	}
	return best
}

func leaderCounts(lead []int, members int) []int {
	out := make([]int, members)
	for _, l := range lead {
		if l >= 0 {
			out[l]++
		}
	}
	return out
}

// dialClients dials k Clients of the cell's members, each with its own
// read/write token (Client 0 with the load generator's, the others with
// one made for it: `paros cert token --subject "bench load K"`).
func (s *parosSys) dialClients(ctx context.Context, k int) ([]*client.Client, error) {
	var cls []*client.Client
	for i := range k {
		tok, err := s.loadToken(ctx, i)
		if err != nil {
			closeClients(cls)
			return nil, err
		}
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cl, err := client.Dial(dctx, s.addrs, client.WithCAFile(s.creds.caFile), client.WithToken(tok))
		cancel()
		if err != nil {
			closeClients(cls)
			return nil, err
		}
		cls = append(cls, cl)
	}
	return cls, nil
}

// loadToken is the read/write token of load principal k (0: the load
// generator's own), made once with the shipped command.
func (s *parosSys) loadToken(ctx context.Context, k int) (string, error) {
	if k == 0 {
		return s.creds.client, nil
	}
	for len(s.tokens) < k {
		tok, err := s.cert(ctx, "token", "--ca", filepath.Dir(s.creds.caFile), "--subject", fmt.Sprintf("bench load %d", len(s.tokens)+1),
			"--all", "--ops", "read,write", "--ttl", "24h")
		if err != nil {
			return "", err
		}
		s.tokens = append(s.tokens, tok)
	}
	return s.tokens[k-1], nil
}

func closeClients(cls []*client.Client) {
	for _, cl := range cls {
		_ = cl.Close()
	}
}

// claimUntil opens a Writer with the library's defaults on j and claims
// it, trying again until deadline.
func claimUntil(ctx context.Context, j *client.Journal, deadline time.Time) (*client.Writer, error) {
	for {
		w := j.NewWriter()
		d := time.Now().Add(30 * time.Second)
		if deadline.Before(d) {
			d = deadline
		}
		cctx, cancel := context.WithDeadline(ctx, d)
		err := w.Claim(cctx)
		cancel()
		if err == nil {
			return w, nil
		}
		_ = w.Close()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, err
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

// claimAll claims a Writer on every journal, journal j's over Client
// j % len(cls), scaleClaimers at once.
func (s *parosSys) claimAll(ctx context.Context, cls []*client.Client, wait time.Duration) ([]*client.Writer, error) {
	deadline := time.Now().Add(wait)
	ws := make([]*client.Writer, len(s.jids))
	var errs firstError
	forEach(ctx, len(ws), scaleClaimers, func(j int) {
		w, err := claimUntil(ctx, cls[j%len(cls)].Journal(s.jids[j]), deadline)
		if err != nil {
			errs.add(fmt.Errorf("journal %s: %w", s.jids[j], err))
			return
		}
		ws[j] = w
	})
	if errs.n > 0 || ctx.Err() != nil {
		closeWriters(ws)
		return nil, fmt.Errorf("paros: claims of %d of %d journals failed within %v, first: %s", errs.n, len(ws), wait, orDash(errs.String(), "interrupted"))
	}
	return ws, nil
}

func closeWriters(ws []*client.Writer) {
	for _, w := range ws {
		if w != nil {
			_ = w.Close()
		}
	}
}

// scaleW2 runs W2 over every journal of the cell: a Writer per journal,
// claimed once, scaleWritersPerClient Writers per Client, and the
// scaleInflight appends in flight spread round robin over the Writers.
func (s *parosSys) scaleW2(ctx context.Context, p scalePlan, tick func()) *scaleW2 {
	n := len(s.jids)
	out := &scaleW2{Inflight: p.Inflight, Writers: n, Clients: (n + scaleWritersPerClient - 1) / scaleWritersPerClient}
	cls, err := s.dialClients(ctx, out.Clients)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer closeClients(cls)
	c0 := s.memberCounters()
	t0 := time.Now()
	ws, err := s.claimAll(ctx, cls, scaleBudget(n))
	out.SetupS = time.Since(t0).Seconds()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	pw := &parosWriter{s: s, ws: ws, opened: time.Now()}
	cpu0, t1 := membersCPU(s.procs), time.Now()
	r := runClosed(ctx, pw, p.Inflight, 1, secs(p.WarmupS), secs(p.MeasureS), tick)
	out.CPUCores = (membersCPU(s.procs) - cpu0).Seconds() / time.Since(t1).Seconds()
	pw.close()
	out.Counters = countersDelta(c0, s.memberCounters())
	st := s.takeStats()
	out.Stats, out.Load = &st, &r
	if r.Writes == 0 {
		out.Error = "no append acknowledged in the measured window: " + orDash(r.FirstError, "no error either")
	}
	return out
}

// scaleRestart kills member scaleRestartMember with SIGKILL, restarts it
// on its data dir with the same arguments, and times, from the restart,
// its first Inspect answer with its cell and a served read of every
// journal, both through a Client of that member alone.
func (s *parosSys) scaleRestart(ctx context.Context, budget time.Duration) *scaleRestart {
	i, n := scaleRestartMember, len(s.jids)
	out := &scaleRestart{Member: s.procs[i].name, Readers: scaleReaders}
	s.procs[i].kill()
	t0 := time.Now()
	c, err := startChild(s.procs[i].name, s.mlogs[i], s.bin, s.margs[i]...)
	if err != nil {
		out.Error = "restart: " + err.Error()
		return out
	}
	s.procs[i] = c
	dctx, cancel := context.WithDeadline(ctx, t0.Add(budget))
	defer cancel()
	cl, err := client.Dial(dctx, []string{s.addrs[i]}, s.clientOpts()...)
	if err != nil {
		out.Error = fmt.Sprintf("%s answered no Inspect within %v of its restart: %v", out.Member, budget, err)
		return out
	}
	defer cl.Close()
	for {
		ictx, cancel := context.WithTimeout(dctx, 5*time.Second)
		st := admin.New(cl).Inspect(ictx, journal.ID{})[0]
		cancel()
		if st.Err == nil && st.CellID != 0 {
			out.InspectMs, out.InspectJournals = ms(time.Since(t0)), len(st.Journals)
			break
		}
		if dctx.Err() != nil {
			out.Error = fmt.Sprintf("%s did not answer Inspect with its cell within %v of its restart (last: %v)", out.Member, budget, st.Err)
			return out
		}
		sleepCtx(dctx, 20*time.Millisecond)
	}
	at := make([]int64, n) // ns from the restart; 0: not read
	var retries firstError
	forEach(dctx, n, scaleReaders, func(j int) {
		jr := cl.Journal(s.jids[j])
		for dctx.Err() == nil {
			rctx, cancel := context.WithTimeout(dctx, 10*time.Second)
			page, err := jr.Read(rctx, journal.ReadRequest{FromSeq: 1, Limit: 1})
			cancel()
			switch {
			case err == nil && page.Served && !page.UnknownJournal:
				at[j] = int64(time.Since(t0))
				return
			case err == nil && page.UnknownJournal:
				err = fmt.Errorf("unknown journal %s", s.jids[j])
			case err == nil:
				err = errors.New("not served")
			}
			retries.add(err)
			sleepCtx(dctx, 20*time.Millisecond)
		}
	})
	out.Retries, out.FirstRetry = retries.n, retries.String()
	var l latencies
	for _, v := range at {
		if v > 0 {
			l = append(l, v)
		}
	}
	slices.Sort(l)
	out.Read = len(l)
	if len(l) > 0 {
		out.AllReadMs, out.ReadP50Ms, out.ReadP99Ms = ms(time.Duration(l[len(l)-1])), ms(l.quantile(0.5)), ms(l.quantile(0.99))
	}
	if len(l) < n {
		out.Error = fmt.Sprintf("%d of %d journals served no read through %s within %v of its restart (first retry: %s)",
			n-len(l), n, out.Member, budget, orDash(out.FirstRetry, "none"))
	}
	return out
}

// scaleFailover claims a Writer on every journal, finds the leaders,
// kills the member that leads the most with SIGKILL, then appends one
// record to every journal (scaleWorkers journals at once, each Writer
// closed once its append is acknowledged, so at most scaleWorkers
// WriteStreams are open) and times each journal's first acknowledgement
// from the kill. An append that fails is tried again; a Writer that
// stopped is replaced by a new claim.
func (s *parosSys) scaleFailover(ctx context.Context, budget time.Duration) *scaleFailover {
	n := len(s.jids)
	out := &scaleFailover{Workers: scaleWorkers}
	cls, err := s.dialClients(ctx, scaleFailoverClients)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer closeClients(cls)
	t0 := time.Now()
	ws, err := s.claimAll(ctx, cls, budget)
	out.ClaimS = time.Since(t0).Seconds()
	if err != nil {
		out.Error = "before the kill: " + err.Error()
		return out
	}
	defer closeWriters(ws)
	lead, err := s.surveyLeaders(ctx, budget)
	out.LeadersBefore = leaderCounts(lead, len(s.procs))
	if err != nil {
		out.Error = "before the kill: " + err.Error()
		return out
	}
	victim := 0
	for i, c := range out.LeadersBefore {
		if c > out.LeadersBefore[victim] {
			victim = i
		}
	}
	out.Killed, out.KilledLed = s.procs[victim].name, out.LeadersBefore[victim]
	filler := randomFiller()
	c0 := s.memberCounters()
	killAt := time.Now()
	s.procs[victim].kill()
	dctx, cancel := context.WithDeadline(ctx, killAt.Add(budget))
	defer cancel()
	ack, call := make([]int64, n), make([]int64, n) // ns; 0: no acknowledgement
	var retries firstError
	// Each Client's journals are written by its own workers, so no
	// principal has more than scaleWritersPerClient streams open.
	var wg sync.WaitGroup
	for k := range cls {
		mine := make([]int, 0, n/len(cls)+1)
		for j := k; j < n; j += len(cls) {
			mine = append(mine, j)
		}
		wg.Go(func() {
			forEach(dctx, len(mine), scaleWorkers/len(cls), func(m int) {
				j, start := mine[m], time.Now()
				if s.appendOnce(dctx, cls[k], j, &ws[j], filler, killAt.Add(budget), &retries) {
					now := time.Now()
					ack[j], call[j] = int64(now.Sub(killAt)), int64(now.Sub(start))
				}
			})
		})
	}
	wg.Wait()
	out.Retries, out.FirstRetry = retries.n, retries.String()
	out.Counters = countersDelta(c0, s.memberCounters())
	var all, led, calls latencies
	for j := range n {
		if ack[j] == 0 {
			continue
		}
		all, calls = append(all, ack[j]), append(calls, call[j])
		if lead[j] == victim {
			led = append(led, ack[j])
		}
	}
	for _, l := range []latencies{all, led, calls} {
		slices.Sort(l)
	}
	out.Acked = len(all)
	if len(all) > 0 {
		out.LastAckMs, out.P50Ms, out.P99Ms = ms(time.Duration(all[len(all)-1])), ms(all.quantile(0.5)), ms(all.quantile(0.99))
		out.CallP50Ms, out.CallP99Ms = ms(calls.quantile(0.5)), ms(calls.quantile(0.99))
	}
	if len(led) > 0 {
		out.LedLastMs, out.LedP50Ms, out.LedP99Ms = ms(time.Duration(led[len(led)-1])), ms(led.quantile(0.5)), ms(led.quantile(0.99))
	}
	if len(all) < n {
		out.Error = fmt.Sprintf("%d of %d journals acknowledged no append within %v of the kill of %s (first retry: %s)",
			n-len(all), n, budget, out.Killed, orDash(out.FirstRetry, "none"))
	}
	return out
}
