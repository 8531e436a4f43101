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
)

// The matchmaker set on a running cell: matchmakers set, through the client
// library's admin.Client.SetMatchmakers. It is cell-wide: one set of matchmakers
// serves every journal, and a handover replaces it by its next generation.

// matchmakersWait is how long matchmakers set waits, in all, by default.
const matchmakersWait = 2 * time.Minute

func matchmakersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "matchmakers",
		Short: "change the cell's matchmaker set",
		Long: `The cell's matchmakers: the machines that hold every journal's
configurations (Matchmaker Paxos), one set for the whole cell, moved as a
whole to its next generation.`,
	}
	cmd.AddCommand(matchmakersSetCmd(g))
	return cmd
}

func matchmakersSetCmd(g *globals) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "set M1,M2,M3",
		Short: "replace the cell's matchmakers by these machines (the next generation)",
		Long: `Replace the cell's matchmaker set by the machines named, the next
generation of the set. Each is a node id in hex, as 'parosctl cell machines'
prints it, or the host:port of an idle 'paros serve' on an empty data dir
(same CA as the cell), which is admitted to the cell first. Three or five
machines in different failure domains is the usual choice; a majority of
them must be up for any journal to elect a consensus leader.

The handover freezes the set in force, carries its registrations over to the
new members, has a majority of the old members decide the new set, and
activates it; journals keep serving throughout (a leader needs the
matchmakers only to change rounds). 'parosctl journal inspect' shows the
generation each machine follows (matchmakers=...@gN).

To replace a dead machine, 'parosctl journal reconfigure' every journal away
from it onto its replacement: the first reconfiguration that removes it
moves its matchmaker too. This command is for moving the set on its own.
Run the same command again after a failure or a timeout: a handover left
half way is finished by the next one.

Exit codes: 0 the set was chosen (it prints which, and the members that
activated it); 1 no machine reachable; 2 bad arguments; 3 refused (a plain
cell, an unknown or replica machine, the credentials); 4 ambiguous (the
handover may still complete: run it again).`,
		Example: `  parosctl matchmakers set "$(parosctl cell machines -o json | jq -r '[.machines[].node] | join(",")')"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			members := addrList(args[0])
			if len(members) == 0 {
				return fail(exitBadArgs, "no matchmaker: pass M1,M2,M3 (node ids in hex or host:port)")
			}
			return g.withClient(func(c *client.Client) error {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				set, err := setMatchmakers(ctx, c, members)
				if err != nil {
					return err
				}
				g.print(matchmakersLine(set), set)
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", matchmakersWait, "how long to wait for the handover")
	return withSchema(cmd, matchmakersOut{}, false)
}

// setMatchmakers hands the set over to members and returns the set
// chosen.
func setMatchmakers(ctx context.Context, c *client.Client, members []string) (matchmakersOut, error) {
	start := time.Now()
	set, err := admin.New(c).SetMatchmakers(ctx, members)
	if err != nil {
		return matchmakersOut{}, matchmakersError(err)
	}
	return matchmakersOut{Generation: set.Generation, Members: hexIDs(set.Members), Activated: hexIDs(set.Activated),
		ElapsedMs: time.Since(start).Milliseconds()}, nil
}

// matchmakersLine is a set chosen as text prints it.
func matchmakersLine(set matchmakersOut) string {
	return fmt.Sprintf("matchmakers: generation %d %s activated=%s elapsed=%s", set.Generation, strings.Join(set.Members, ","),
		strings.Join(set.Activated, ","), time.Duration(set.ElapsedMs)*time.Millisecond)
}

// matchmakersError maps the error of SetMatchmakers to an exit code.
func matchmakersError(err error) error {
	switch {
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrAmbiguous), errors.Is(err, context.DeadlineExceeded):
		return fail(exitAmbiguous, "ambiguous: %v", err)
	case errors.Is(err, client.ErrNoServer):
		return fail(exitUnreachable, "unreachable: %v", err)
	}
	return fail(exitRefused, "refused: %v", err)
}
