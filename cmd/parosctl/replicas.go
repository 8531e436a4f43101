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

// The replica tier on a running cell: replicas set, through the client
// library's admin.Client.SetReplicas. It is a command of its own, not a flag of
// reconfigure: reconfigure moves one journal's acceptors through a round
// change, while the replica list is cell-wide (every journal of the plan)
// and no part of any quorum.

// replicasWait is how long replicas set waits, in all, by default.
const replicasWait = 30 * time.Second

func replicasCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replicas",
		Short: "change the cell's replica machines",
	}
	cmd.AddCommand(replicasSetCmd(g))
	return cmd
}

func replicasSetCmd(g *globals) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "set ADDR[,ADDR...]|none",
		Short: "make exactly these machines the cell's replicas (adding and removing)",
		Long: `Make the machines at the given addresses the cell's replica
machines, and only them ('none' removes every one). Each address is a replica
machine of the cell or an idle 'paros serve --role replica' on an empty data
dir (same CA as the cell), which joins the cell, formats a store for every
journal and catches up by itself. Every machine of the cell records the new
list. A replica left out keeps its stores and still runs, but no acceptor
answers it any more: its reads go unserved.

The list is no part of any quorum: writes go on throughout. Running the same
command again is a no-op, and finishes one that failed half way.

Exit codes: 0 every machine runs the list; 1 a machine did not answer (run it
again); 2 bad arguments; 3 refused (a node machine or an acceptor named as a
replica, a machine of another cell, the credentials).`,
		Example: `  paros serve --data /tmp/replica1 --listen 127.0.0.1:7404 --role replica --insecure &   # beside 'paros dev --insecure'
  parosctl replicas set 127.0.0.1:7404
  parosctl replicas set none`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			addrs, err := parseReplicaAddrs(args[0])
			if err != nil {
				return err
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			start := time.Now()
			if err := admin.New(c).SetReplicas(ctx, addrs); err != nil {
				return replicasError(err)
			}
			elapsed := time.Since(start)
			g.print(fmt.Sprintf("replicas set: %s elapsed=%s", replicaList(addrs), elapsed.Round(time.Millisecond)),
				machineSetOut{Machines: addrs, ElapsedMs: elapsed.Milliseconds()})
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", replicasWait, "how long to wait for every machine")
	return withSchema(cmd, machineSetOut{}, false)
}

// parseReplicaAddrs reads replicas set's argument: host:port addresses,
// comma-separated, or none.
func parseReplicaAddrs(s string) ([]string, error) { return parseMachineAddrs(s, "replica") }

// parseMachineAddrs reads the argument of replicas set and proxies set
// (what names the machines: "replica", "proxy"): host:port addresses,
// comma-separated, or none.
func parseMachineAddrs(s, what string) ([]string, error) {
	addrs := []string{}
	if strings.TrimSpace(s) == "none" {
		return addrs, nil
	}
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
			continue
		case !strings.Contains(a, ":"):
			return nil, fail(exitBadArgs, "%s %q: want host:port", what, a)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, fail(exitBadArgs, "no %s address: pass ADDR[,ADDR...], or none to remove every %s", what, what)
	}
	return addrs, nil
}

// replicaList prints an address list as parseMachineAddrs reads it.
func replicaList(addrs []string) string {
	if len(addrs) == 0 {
		return "none"
	}
	return strings.Join(addrs, ",")
}

// replicasError maps the error of SetReplicas to an exit code.
func replicasError(err error) error {
	switch {
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer), errors.Is(err, context.DeadlineExceeded):
		return fail(exitUnreachable, "unreachable: %v", err)
	}
	return fail(exitRefused, "refused: %v", err)
}
