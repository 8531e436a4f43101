package blackbox

// This file checks the background scrubber end to end, as an operator would
// meet rot: three `paros serve` processes built with -tags parostesthooks
// (whose admin listener, --metrics, adds POST /debug/damage, which flips a
// bit of one record's stored value on that machine's disk and syncs it),
// scrubbing at the fastest pace serve allows (--scrub-pass 5s, the floor of
// 100 ticks, and --scrub-interval 50ms, one tick). A client writes more
// records than a machine keeps in memory (the hot window, 1,024 slots), so
// the oldest slots can only be repaired from a peer's chosen copy and the
// newest from the value still in memory. Then three records of one machine
// are rotted on its disk — an old slot, a middle one and a recent one —
// while the client keeps writing, and the test waits (30 s at most) until
// that machine's /metrics reports them repaired, logging how long it took.
// It checks that no write failed at any time, that no machine counts a
// scrub mismatch or an unrecoverable slot, that once a further full pass
// has run the machine repaired nothing more (its disk holds the records
// again), and that every record reads back with its bytes from every
// machine alone. One subtest rots a follower's copies, one the leader's.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/core/journal"
)

// Scrub test sizes and bounds.
const (
	// scrubRecords is written before the damage: past the hot window's
	// 1,024 slots (one record per slot when each Append waits for its ack).
	scrubRecords = 1200
	// scrubDamaged is how many records of the target are rotted.
	scrubDamaged = 3
	// scrubRepairWait bounds the wait for the repair, scrubPassWait the
	// wait for a further full pass (each a 5 s bound at this pace).
	scrubRepairWait = 30 * time.Second
	scrubPassWait   = 30 * time.Second
)

// hooks is the paros binary built with -tags parostesthooks, once.
var hooks struct {
	once sync.Once
	bin  string
	err  error
}

func hooksBinary(t *testing.T) string {
	t.Helper()
	hooks.once.Do(func() {
		hooks.bin = filepath.Join(binDir, "paros-testhooks")
		out, err := exec.Command("go", "build", "-tags", "parostesthooks", "-o", hooks.bin, "github.com/parosdb/paros/cmd/paros").CombinedOutput()
		if err != nil {
			hooks.err = fmt.Errorf("build paros -tags parostesthooks: %v\n%s", err, out)
		}
	})
	if hooks.err != nil {
		t.Fatal(hooks.err)
	}
	return hooks.bin
}

func TestScrubRepairsRotOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of three processes")
	}
	t.Run("follower", func(t *testing.T) { scrubRepairs(t, false) })
	t.Run("leader", func(t *testing.T) { scrubRepairs(t, true) })
}

// scrubRepairs rots three records of the leader's copy (leader) or a
// follower's and checks they are repaired; see the file comment.
func scrubRepairs(t *testing.T, leader bool) {
	// Arrange: a secure cell of hook binaries scrubbing fast, each with its
	// admin listener; a claimed writer and scrubRecords records.
	bin := hooksBinary(t)
	admin := make([]string, 3)
	c := newCellWith(t, func(i int, p *proc) {
		admin[i] = freeAddr(t)
		p.bin = bin
		p.args = []string{"--metrics", admin[i], "--scrub-pass", "5s", "--scrub-interval", "50ms"}
	})
	ref := c.initCell()
	id := mustID(t, ref)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn := c.dial(ctx, c.procs)
	w := conn.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	want := map[journal.Seq][]byte{}
	writeCtx, stopWrites := context.WithCancel(ctx) // ended early only when the test fails
	defer stopWrites()
	appendOne := func(i int) error {
		rec := scrubRecord(i)
		seq, err := w.Append(writeCtx, rec)
		if err != nil {
			return fmt.Errorf("append record %d: %w", i, err)
		}
		want[seq] = rec
		return nil
	}
	for i := range scrubRecords {
		if err := appendOne(i); err != nil {
			t.Fatal(err)
		}
	}
	lead := waitRole(t, ctx, conn, id, "leader")
	target := lead
	if !leader {
		target = (lead + 1) % 3
	}
	st := inspect(ctx, conn, id)[target]
	if st.Err != nil {
		t.Fatalf("inspect machine %d: %v", target+1, st.Err)
	}
	before := scrape(t, admin[target])
	t.Logf("machine %d (leader: machine %d) holds slots [%d, %d], %v evicted from memory; scrub pages so far: %v asked, %v answered",
		target+1, lead+1, st.FirstSlot, st.Applied, before.sum("paros_hot_window_evicted_slots"),
		before.sum("paros_scrub_pages"), before.sum("paros_scrub_pages_answered"))

	// Act: rot an old slot, a middle one and a recent one of the target's
	// disk while a background writer keeps appending.
	stop := make(chan struct{})
	written := make(chan error, 1)
	go func(stop <-chan struct{}) {
		i := scrubRecords
		for {
			select {
			case <-stop:
				written <- nil
				return
			default:
			}
			if err := appendOne(i); err != nil {
				written <- err
				return
			}
			i++
			time.Sleep(10 * time.Millisecond)
		}
	}(stop)
	stopWriter := func() error {
		if stop == nil {
			return nil
		}
		close(stop)
		stop = nil
		return <-written
	}
	defer func() {
		stopWrites()
		_ = stopWriter()
	}()
	lo := max(st.FirstSlot, 2)
	var damaged []uint64
	for _, s := range []uint64{lo, lo + (st.Applied-lo)/2, st.Applied - 2} {
		damaged = append(damaged, damage(t, admin[target], ref, s))
	}
	damagedAt := time.Now()
	t.Logf("rotted slots %v of machine %d", damaged, target+1)
	var repaired metrics
	for {
		repaired = scrape(t, admin[target])
		if repaired.sum("paros_repaired_records") >= scrubDamaged {
			break
		}
		checkRunning(t, c)
		if time.Since(damagedAt) > scrubRepairWait {
			t.Fatalf("machine %d repaired %v of %d rotted records in %v\n%s", target+1,
				repaired.sum("paros_repaired_records"), scrubDamaged, scrubRepairWait, scrubReport(t, c, admin))
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(damagedAt)
	if err := stopWriter(); err != nil {
		t.Fatalf("a write failed while the scrubber repaired: %v", err)
	}
	t.Logf("machine %d repaired its %d rotted records %v after the damage (from memory %v, from a peer %v)",
		target+1, scrubDamaged, took.Round(time.Millisecond),
		repaired.get(`paros_repaired_records{from="memory"}`), repaired.get(`paros_repaired_records{from="peer"}`))

	// Check: no mismatch, no unrecoverable slot anywhere; a further full
	// pass finds nothing left to repair on the target; every record reads
	// back intact from every machine alone.
	passes := 0.0
	for _, a := range admin {
		passes += scrape(t, a).sum("paros_scrub_passes")
	}
	for deadline := time.Now().Add(scrubPassWait); ; {
		now := 0.0
		for _, a := range admin {
			now += scrape(t, a).sum("paros_scrub_passes")
		}
		if now >= passes+2 { // the pass under way, then one begun after it
			break
		}
		checkRunning(t, c)
		if time.Now().After(deadline) {
			t.Fatalf("no further full scrub pass within %v\n%s", scrubPassWait, scrubReport(t, c, admin))
		}
		time.Sleep(100 * time.Millisecond)
	}
	after := scrape(t, admin[target])
	if got := after.sum("paros_repaired_records"); got != repaired.sum("paros_repaired_records") {
		t.Fatalf("machine %d repaired %v records by the next pass, %v before: its disk did not keep the repair\n%s",
			target+1, got, repaired.sum("paros_repaired_records"), scrubReport(t, c, admin))
	}
	for i, a := range admin {
		m := scrape(t, a)
		if mm := m.sum("paros_scrub_mismatches"); mm != 0 {
			t.Fatalf("machine %d counts %v scrub mismatches (a bug, never rot)\n%s", i+1, mm, c.procs[i].stderr)
		}
		if u := m.get(`paros_ctrl_decisions{case="unrecoverable"}`); u != 0 {
			t.Fatalf("machine %d found %v unrecoverable slots\n%s", i+1, u, c.procs[i].stderr)
		}
	}
	end := journal.Seq(len(want)) + journal.FirstSeq
	for i, p := range c.procs {
		got := readBack(t, ctx, c, p, id, end)
		if len(got) != len(want) {
			t.Fatalf("machine %d reads %d records back, want %d", i+1, len(got), len(want))
		}
		for k, b := range got {
			if seq := journal.FirstSeq + journal.Seq(k); !bytes.Equal(b, want[seq]) {
				t.Fatalf("machine %d reads %q at %d, want %q", i+1, b, seq, want[seq])
			}
		}
	}
	t.Logf("%d records read back intact from each machine; %v scrub pages asked, %v passes, last pass %vs",
		len(want), after.sum("paros_scrub_pages"), after.sum("paros_scrub_passes"), after.sum("paros_scrub_last_pass_seconds"))
}

// scrubRecord is record i's bytes: its number and 100 bytes of filler.
func scrubRecord(i int) []byte {
	return []byte(fmt.Sprintf("scrub-%06d-%s", i, strings.Repeat(string(rune('a'+i%26)), 100)))
}

// damage rots the record at slot s of journal ref on the machine whose
// admin listener is addr, or at the first slot after s that holds one, and
// returns that slot.
func damage(t *testing.T, addr, ref string, s uint64) uint64 {
	t.Helper()
	for try := s; try < s+8; try++ {
		resp, err := http.Post(fmt.Sprintf("http://%s/debug/damage?journal=%s&slot=%d", addr, url.QueryEscape(ref), try), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return try
		case resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), "no record"):
			continue
		default:
			t.Fatalf("damage slot %d at %s: %s: %s", try, addr, resp.Status, body)
		}
	}
	t.Fatalf("no record to damage in slots [%d, %d) at %s", s, s+8, addr)
	return 0
}

// metrics is one scrape of /metrics: each series ("name{labels}") and its
// value.
type metrics map[string]float64

func scrape(t *testing.T, addr string) metrics {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); i > 0 && err == nil {
			m[line[:i]] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// get is one series' value (0: absent).
func (m metrics) get(series string) float64 { return m[series] }

// sum adds every series of metric name, whatever its labels.
func (m metrics) sum(name string) float64 {
	total := 0.0
	for series, v := range m {
		if n, _, _ := strings.Cut(series, "{"); n == name {
			total += v
		}
	}
	return total
}

// scrubReport is every machine's scrub and CTRL series and its log, for a
// failure message.
func scrubReport(t *testing.T, c *cell, admin []string) string {
	var b strings.Builder
	for i, a := range admin {
		fmt.Fprintf(&b, "machine %d:", i+1)
		m := scrape(t, a)
		for series, v := range m {
			if strings.HasPrefix(series, "paros_scrub") || strings.HasPrefix(series, "paros_repaired") ||
				strings.HasPrefix(series, "paros_ctrl") || strings.HasPrefix(series, "paros_hot_window") ||
				strings.HasPrefix(series, "paros_cold_read") || strings.HasPrefix(series, "paros_contract") {
				fmt.Fprintf(&b, " %s=%v", series, v)
			}
		}
		fmt.Fprintf(&b, "\n%s\n", c.procs[i].stderr)
	}
	return b.String()
}
