package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// The names rows: journals created and deleted at run time, by name,
// through the client, against JetStream streams (R3, file storage, sync
// always) created and deleted through its client in the same run. Each
// side creates n, inflight at a time, then deletes the same n; a sample of
// them measures the time from the create call to the first acknowledged
// append (paros: create, claim, append; JetStream: create, publish).

// namesResult is one system's names rows.
type namesResult struct {
	System           string
	Created, Deleted int
	CreateS, DeleteS float64
	FirstAck         []time.Duration // sorted
	// Call is each create call's own duration (until it returns), sorted.
	Call       []time.Duration
	Errors     int
	FirstError string
}

func (r namesResult) createRate() float64              { return float64(r.Created) / r.CreateS }
func (r namesResult) deleteRate() float64              { return float64(r.Deleted) / r.DeleteS }
func (r namesResult) firstAck(q float64) time.Duration { return quantile(r.FirstAck, q) }

// quantile is the q-quantile of sorted ds (0 when empty).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(q*float64(len(ds))))]
}

// namesSample is how many of the journals also measure create to first ack.
const namesSample = 200

func names(args []string) error {
	fs := flag.NewFlagSet("names", flag.ExitOnError)
	n := fs.Int("journals", 10_000, "journals (paros) and streams (JetStream) to create, then delete")
	inflight := fs.Int("inflight", 16, "calls in flight")
	out := fs.String("out", "", "write the markdown table to this file too")
	pick := fs.String("systems", "paros,jetstream", "which systems to run, comma-separated")
	profDir := fs.String("profile", "", "take a CPU profile of every paros member over the first 10 s of the creates into this directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	_, root, err := findDirs()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "paros-bench-names-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()

	var results []namesResult
	if strings.Contains(*pick, "paros") {
		p := newParos(root, true)
		if err := p.start(ctx, filepath.Join(work, "paros")); err != nil {
			return err
		}
		if *profDir != "" {
			profileMembers(ctx, p, *profDir)
		}
		results = append(results, p.namesRows(ctx, *n, *inflight))
		p.stop()
		fmt.Print(namesTable(results, *n, *inflight))
	}
	if !strings.Contains(*pick, "jetstream") {
		return nil
	}
	s := newNATS(self, true)
	natsDir := filepath.Join(work, "nats")
	if err := os.MkdirAll(natsDir, 0o755); err != nil {
		return err
	}
	if err := s.start(ctx, natsDir); err != nil {
		return err
	}
	results = append(results, s.namesRows(ctx, *n, *inflight))
	s.stop()

	table := namesTable(results, *n, *inflight)
	fmt.Print(table)
	if *out != "" {
		return os.WriteFile(*out, []byte(table), 0o644)
	}
	return nil
}

// profileMembers takes a 10-second CPU profile of every member of s into
// dir, starting a second from now (the creates under way by then), and
// prints where each file went.
func profileMembers(ctx context.Context, s *parosSys, dir string) {
	go func() {
		sleepCtx(ctx, time.Second)
		for i := range s.members() {
			go func() {
				if p := profileMember(s, dir, "names", i, fmt.Sprintf("member%d", i), 10); p != "" {
					fmt.Fprintf(os.Stderr, "profile of member %d: %s\n", i, p)
				}
			}()
		}
	}()
}

// namesRun creates then deletes n things with create and remove, inflight
// at a time; the first namesSample also measure create to first ack.
func namesRun(ctx context.Context, system string, n, inflight int,
	create func(i int, sampled bool) (call, firstAck time.Duration, err error), remove func(i int) error) namesResult {
	r := namesResult{System: system}
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if r.Errors == 0 {
			r.FirstError = err.Error()
		}
		r.Errors++
	}
	t0 := time.Now()
	var created []int
	forEach(ctx, n, inflight, func(i int) {
		call, d, err := create(i, i < namesSample)
		if err != nil {
			fail(err)
			return
		}
		mu.Lock()
		created = append(created, i)
		r.Call = append(r.Call, call)
		if i < namesSample {
			r.FirstAck = append(r.FirstAck, d)
		}
		mu.Unlock()
	})
	r.CreateS, r.Created = time.Since(t0).Seconds(), len(created)
	slices.Sort(r.FirstAck)
	slices.Sort(r.Call)
	t0 = time.Now()
	var deleted int
	forEach(ctx, len(created), inflight, func(k int) {
		if err := remove(created[k]); err != nil {
			fail(err)
			return
		}
		mu.Lock()
		deleted++
		mu.Unlock()
	})
	r.DeleteS, r.Deleted = time.Since(t0).Seconds(), deleted
	return r
}

func (s *parosSys) namesRows(ctx context.Context, n, inflight int) namesResult {
	name := func(i int) string { return fmt.Sprintf("bench/j%05d", i) }
	// Creating tenants and journals takes an admin token.
	cl, err := client.Dial(ctx, s.addrs, client.WithCAFile(s.creds.caFile), client.WithToken(s.creds.admin))
	if err != nil {
		return namesResult{System: "paros", Errors: 1, FirstError: err.Error()}
	}
	defer cl.Close()
	adm := admin.New(cl)
	if _, err := adm.CreateTenant(ctx, "bench"); err != nil {
		return namesResult{System: "paros", Errors: 1, FirstError: err.Error()}
	}
	return namesRun(ctx, "paros (TLS, tokens)", n, inflight, func(i int, sampled bool) (time.Duration, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		t0 := time.Now()
		info, err := adm.CreateJournal(cctx, name(i))
		call := time.Since(t0)
		if err != nil || !sampled {
			return call, 0, err
		}
		w := cl.Journal(info.ID).NewWriter()
		defer w.Close()
		if err := w.Claim(cctx); err != nil {
			return call, 0, err
		}
		if _, err := w.Append(cctx, []byte("first")); err != nil {
			return call, 0, err
		}
		return call, time.Since(t0), nil
	}, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return adm.DeleteJournal(cctx, name(i))
	})
}

func (s *natsSys) namesRows(ctx context.Context, n, inflight int) namesResult {
	stream := func(i int) string { return fmt.Sprintf("NAMES_%d", i) }
	return namesRun(ctx, "JetStream (R3, sync always)", n, inflight, func(i int, sampled bool) (time.Duration, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		t0 := time.Now()
		_, err := s.admin.CreateStream(cctx, jetstream.StreamConfig{
			Name: stream(i), Subjects: []string{fmt.Sprintf("names.%d", i)}, Storage: jetstream.FileStorage,
			Replicas: 3, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
		})
		call := time.Since(t0)
		if err != nil || !sampled {
			return call, 0, err
		}
		if _, err := s.admin.Publish(cctx, fmt.Sprintf("names.%d", i), []byte("first")); err != nil {
			return call, 0, err
		}
		return call, time.Since(t0), nil
	}, func(i int) error {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		return s.admin.DeleteStream(cctx, stream(i))
	})
}

func namesTable(rs []namesResult, n, inflight int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| %d by name, %d in flight | created/s | deleted/s | create call p50 | create → first ack p50 | p99 | errors |\n", n, inflight)
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %.0f (%d in %.1f s) | %.0f (%d in %.1f s) | %v | %v | %v | %d %s |\n", r.System,
			r.createRate(), r.Created, r.CreateS, r.deleteRate(), r.Deleted, r.DeleteS, quantile(r.Call, 0.5).Round(time.Millisecond),
			r.firstAck(0.5).Round(time.Millisecond), r.firstAck(0.99).Round(time.Millisecond), r.Errors, r.FirstError)
	}
	return b.String()
}
