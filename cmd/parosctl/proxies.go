package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// The proxy leaders on a running cell: proxies set, through the client
// library's admin.Client.SetProxies, as replicas set changes the replicas. Like
// the replica list, the proxy list is cell-wide (every journal of the
// plan) and no part of any quorum.

// proxiesWait is how long proxies set waits, in all, by default.
const proxiesWait = 30 * time.Second

func proxiesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "proxies",
		Short: "change the cell's proxy leaders",
	}
	cmd.AddCommand(proxiesSetCmd(g))
	return cmd
}

func proxiesSetCmd(g *globals) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "set ADDR[,ADDR...]|none",
		Short: "make exactly these machines the cell's proxy leaders (adding and removing)",
		Long: `Make the machines at the given addresses the cell's proxy
leaders, and only them ('none' removes every one: the leaders run Phase 2
themselves). Each address is a proxy machine of the cell or an idle 'paros
serve --role proxy' on an empty data dir (same CA as the cell), which joins
the cell first and learns every machine of it. Then every machine of the
cell records the new list: each journal's leader delegates the Phase 2 of
its rounds to the listed proxies in turn, and takes back at once the rounds
it had handed to a proxy left out. A proxy left out keeps running, but no
leader delegates to it any more.

The list is no part of any quorum: writes go on throughout. Running the same
command again is a no-op, and finishes one that failed half way.

Exit codes: 0 every machine runs the list; 1 a machine did not answer (run it
again); 2 bad arguments; 3 refused (a node machine, an acceptor or a replica
named as a proxy, a machine of another cell, the credentials).`,
		Example: `  paros serve --data /tmp/proxy1 --listen 127.0.0.1:7405 --role proxy --insecure &   # beside 'paros dev --insecure'
  parosctl proxies set 127.0.0.1:7405
  parosctl proxies set none`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			addrs, err := parseProxyAddrs(args[0])
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
			if err := admin.New(c).SetProxies(ctx, addrs); err != nil {
				return proxiesError(err)
			}
			elapsed := time.Since(start)
			g.print(fmt.Sprintf("proxies set: %s elapsed=%s", replicaList(addrs), elapsed.Round(time.Millisecond)),
				machineSetOut{Machines: addrs, ElapsedMs: elapsed.Milliseconds()})
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", proxiesWait, "how long to wait for every machine")
	return withSchema(cmd, machineSetOut{}, false)
}

// parseProxyAddrs reads proxies set's argument: host:port addresses,
// comma-separated, or none.
func parseProxyAddrs(s string) ([]string, error) { return parseMachineAddrs(s, "proxy") }

// proxiesError maps the error of SetProxies to an exit code.
func proxiesError(err error) error {
	switch {
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer), errors.Is(err, context.DeadlineExceeded):
		return fail(exitUnreachable, "unreachable: %v", err)
	}
	return fail(exitRefused, "refused: %v", err)
}
