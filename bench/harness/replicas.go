package main

// paros (2 replicas): the headline paros system (secure as shipped, three
// members, 64 journals) plus two replica machines, `paros serve --role
// replica`, each with its own machine certificate from `paros cert node`,
// started before cell init and named in the plan (machine.InitCell's
// replicas, what `parosctl cell init --replicas` sends). A replica learns every
// journal from the leaders' pushes and serves linearizable reads; it never
// votes and never takes a write.
//
// Who dials what: the writers' Client (and Client.Inspect) dials the three
// members only; every reader's Client (W4's tail readers, the read-heavy
// scanners) dials the replicas and the members, and the library
// (client.WithReplicaReads, on by default) asks a replica first. On the
// system without replicas the readers dial the members alone, as before.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/parosdb/paros/client"
)

// parosReplicas is how many replica machines the "paros-replicas" system
// runs.
const parosReplicas = 2

// newParosReplicas is paros, secure as shipped, with parosReplicas replica
// machines.
func newParosReplicas(root string) *parosSys {
	return &parosSys{root: root, secure: true, replicas: parosReplicas}
}

// startReplicas starts the replica machines (none when the system has
// none). They wait to be formed, like a member's first start.
func (s *parosSys) startReplicas(dir string) error {
	for i := range s.replicas {
		data := filepath.Join(dir, fmt.Sprintf("paros-r%d", i+1))
		args := []string{"serve", "--role", "replica", "--tls", s.creds.nodeDirs[3+i],
			"--data", data, "--listen", s.raddrs[i], "--pprof", s.rpprof[i], "--metrics", s.metrics[3+i]}
		c, err := startChild(fmt.Sprintf("%s-r%d", s.key(), i+1), data+".log", s.bin, args...)
		if err != nil {
			return err
		}
		s.rprocs = append(s.rprocs, c)
	}
	return nil
}

// readerAddrs is the address list of reader number `reader`'s Client: the
// replicas, then the members, each list rotated by the reader's number so
// that the readers' first reads spread over the replicas (or, without
// replicas, over the members). The order within each list is the
// library's order of asking; replicas come first by the library's rule
// whatever their place in the list.
func (s *parosSys) readerAddrs(reader int) []string {
	var out []string
	for _, l := range [][]string{s.raddrs, s.addrs} {
		for k := range l {
			out = append(out, l[(reader+k)%len(l)])
		}
	}
	return out
}

// allProcs is every process of the cell: the members, then the replicas,
// then the proxies.
func (s *parosSys) allProcs() []*child { return slices.Concat(s.procs, s.rprocs, s.pprocs) }

// waitReplicasServe waits until each replica serves a read of the journals
// the readers read (W4's and the read-heavy rows'), read from that replica
// alone.
func (s *parosSys) waitReplicasServe(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for _, a := range s.raddrs {
		dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		cl, err := client.Dial(dctx, []string{a}, s.clientOpts()...)
		cancel()
		if err != nil {
			return fmt.Errorf("paros: replica %s: %w", a, err)
		}
		for _, j := range []int{1, readHeavyJournal} {
			for {
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := tailOf(rctx, cl.Journal(s.jids[j]))
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(deadline) || ctx.Err() != nil {
					cl.Close()
					return fmt.Errorf("paros: replica %s serves no read of journal %s after %v: %w", a, s.jids[j], wait, err)
				}
				sleepCtx(ctx, 50*time.Millisecond)
			}
		}
		cl.Close()
	}
	return nil
}

// procNames are the names of allProcs, in the same order.
func (s *parosSys) procNames() []string {
	var out []string
	for _, c := range s.allProcs() {
		out = append(out, c.name)
	}
	return out
}

// readCounters are the read counters of one process's /metrics.
type readCounters struct {
	// Calls is paros_call_seconds_count{kind="read"}: Read calls answered.
	Calls float64 `json:"read_calls"`
	// Served is paros_quorum_reads{outcome="served"}: quorum reads served.
	Served float64 `json:"quorum_reads_served"`
	// Cold is paros_cold_reads{purpose="read_page"}: records of read pages
	// read back from the store (out of the in-memory window).
	Cold float64 `json:"cold_read_page"`
}

func (a readCounters) minus(b readCounters) readCounters {
	return readCounters{Calls: a.Calls - b.Calls, Served: a.Served - b.Served, Cold: a.Cold - b.Cold}
}

// scrapeReads reads every process's read counters (a zero where /metrics
// does not answer).
func (s *parosSys) scrapeReads() []readCounters {
	out := make([]readCounters, len(s.metrics))
	for i, a := range s.metrics {
		out[i] = scrapeOne(a)
	}
	return out
}

func scrapeOne(addr string) readCounters {
	all := scrapeSeries(addr)
	return readCounters{Calls: all[`paros_call_seconds_count{kind="read"}`],
		Served: all[`paros_quorum_reads{outcome="served"}`], Cold: all[`paros_cold_reads{purpose="read_page"}`]}
}

// summarizeProc is summarizeProfile for any process of a paros cell (a
// replica too), named name.
func summarizeProc(s *parosSys, p memberProfile, name string) string {
	if p.path == "" {
		return ""
	}
	outb, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=18", s.bin, p.path).Output()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("profile: %s (%s %s; not committed)\n%s", filepath.Join("profiles", filepath.Base(p.path)), p.role, name, trimPprof(string(outb)))
}
