package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// journal handoff moves a journal's consensus leadership through the client library's
// admin.Client.Handoff: the leader hands its ballot on to another acceptor, and
// the cell runs no election.

// handoffWait is how long handoff waits, in all, by default.
const handoffWait = 30 * time.Second

func handoffCmd(g *globals) *cobra.Command {
	var toFlag string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "handoff JOURNAL [--to NODE]",
		Short: "move a journal's consensus leadership to another acceptor without an election",
		Long: `Ask JOURNAL's consensus leader to hand its leadership to acceptor --to (a
node id in hex, as 'parosctl journal inspect' prints it: node=...), or,
without --to, to the acceptor it finds most caught up. The leader steps down
at once and the successor goes on at the same ballot: no election, no
Phase 1, writes pause for about one round trip. It waits until the successor
leads and prints it. The writer fence does not move: the journal's writer
goes on writing.

The leader refuses (exit 3, cannot_relinquish and why) while recovery or
repair of a damaged record runs, while more than 256 slots are open (heavy
write load: run it again), and when --to is no other acceptor of the journal
or a replica machine. A leadership that was itself handed to the leader moves
only once (one hop): the leader first re-elects itself at once (one Phase 1,
no election timeout), and the command asks again once it won. When --to
leads already, nothing changes.

Exit codes: 0 the successor leads; 1 no machine reachable; 2 bad arguments;
3 refused (cannot_relinquish, an unknown machine or journal, no leader
within --wait, the credentials); 4 ambiguous (the leader handed on but the
successor was not seen leading within --wait: inspect, or run it again).`,
		Example: `  parosctl journal handoff demo
  parosctl journal handoff demo --to "$(parosctl journal show demo -o json | jq -r '.members[0]')" --wait 10s`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			id, to, err := parseHandoff(args[0], toFlag)
			if err != nil {
				return err
			}
			return g.withClient(func(c *client.Client) error {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				start := time.Now()
				leader, err := admin.New(c).Handoff(ctx, id, to)
				if err != nil {
					return handoffError(err)
				}
				elapsed := time.Since(start)
				g.print(fmt.Sprintf("handoff: %s leader %016x elapsed=%s", id, uint64(leader), elapsed.Round(time.Millisecond)),
					handoffOut{Journal: id.String(), Leader: fmt.Sprintf("%016x", uint64(leader)), ElapsedMs: elapsed.Milliseconds()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&toFlag, "to", "", "node id of the successor (hex, as journal inspect prints it); default: the most caught-up acceptor")
	cmd.Flags().DurationVar(&wait, "wait", handoffWait, "how long to wait for the successor to lead")
	return withSchema(cmd, handoffOut{}, false)
}

// parseHandoff reads handoff's journal argument and --to ("" is 0: the
// leader picks).
func parseHandoff(jref, to string) (journal.ID, admin.NodeID, error) {
	id, err := parseJournal(jref)
	if err != nil {
		return journal.ID{}, 0, err
	}
	if strings.TrimSpace(to) == "" {
		return id, 0, nil
	}
	n, err := parseNode(to)
	if err != nil {
		return journal.ID{}, 0, err
	}
	return id, n, nil
}

// handoffError maps the error of Handoff to an exit code.
func handoffError(err error) error {
	switch {
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer):
		return fail(exitUnreachable, "unreachable: %v", err)
	case errors.Is(err, client.ErrAmbiguous):
		return fail(exitAmbiguous, "ambiguous: %v", err)
	}
	return fail(exitRefused, "refused: %v", err)
}
