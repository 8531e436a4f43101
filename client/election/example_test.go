package election_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/election"
	"github.com/parosdb/paros/core/journal"
)

// Every watcher folds the election journal with the same rule, so every
// watcher agrees on each term's leader.
func ExampleFold() {
	a := journal.LeaderUUID{Hi: 0xa}
	b := journal.LeaderUUID{Hi: 0xb}
	log := [][]byte{
		election.CampaignRecord(1, a, "a:7401"), // the first campaign for term 1 wins it
		election.CampaignRecord(1, b, "b:7401"), // too late: stale
		[]byte("someone else's record"),         // not the election's: ignored
		election.RenewRecord(1, a, "a:7401"),    // the leader renews
		election.ResignRecord(1, a, b),          // and resigns, naming b
		election.CampaignRecord(2, b, "b:7401"), // b wins term 2
	}
	var f election.Fold
	for i, rec := range log {
		ev := f.Apply(journal.Seq(i+1), rec)
		if leader, iface, ok := f.Leader(); ok {
			fmt.Printf("%d %-8s term %d: %s leads at %s\n", i+1, ev.Kind, f.Term(), leader.String()[:16], iface)
		} else {
			fmt.Printf("%d %-8s term %d: no leader, successor %s\n", i+1, ev.Kind, f.Term(), f.Successor().String()[:16])
		}
	}
	// Output:
	// 1 elected  term 1: 000000000000000a leads at a:7401
	// 2 stale    term 1: 000000000000000a leads at a:7401
	// 3 ignored  term 1: 000000000000000a leads at a:7401
	// 4 renewed  term 1: 000000000000000a leads at a:7401
	// 5 resigned term 1: no leader, successor 000000000000000b
	// 6 elected  term 2: 000000000000000b leads at b:7401
}

// A candidate campaigns on the election journal, governs the journal it
// leads with its election uuid as the fence, and writes until that fence
// is taken (ErrSuperseded) — the fence, not the lease, is what keeps an
// earlier leader's writes out.
func Example() {
	ctx := context.Background()
	c, err := client.FromEnv(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	electionJournal := journal.ID{Tenant: 1, Journal: 1} // multi-writer
	governed := journal.ID{Tenant: 1, Journal: 2}        // single-writer

	for ctx.Err() == nil {
		e := election.New(c, electionJournal, election.Interface("10.0.0.9:8080"))
		if _, err := e.Campaign(ctx); err != nil {
			e.Close()
			continue
		}
		w, err := e.Govern(ctx, c.Journal(governed))
		if err != nil {
			e.Close()
			continue
		}
		for e.Leading() {
			if _, err := w.Append(ctx, []byte("work")); errors.Is(err, client.ErrSuperseded) {
				break // a later leader took the journal
			}
		}
		w.Close()
		_ = e.Resign(ctx, journal.LeaderUUID{})
		e.Close()
	}
}
