// Command parosctl is paros's operator and client CLI.
//
//	parosctl --servers a,b,c init --members a,b,c [--journals N]
//	parosctl --servers a,b,c write TENANT/JOURNAL rec1 rec2 [--leader U] [--seq N] [--multi]
//	parosctl --servers a,b,c read TENANT/JOURNAL [--from N] [--limit N] [--wait-ms N]
//	parosctl --servers a,b,c tail -f TENANT/JOURNAL [--from N]
//	parosctl --servers a,b,c truncate TENANT/JOURNAL --up-to N [--leader U] [--multi]
//	parosctl --servers a,b,c set-leader TENANT/JOURNAL [--new U] [--old U|none]
//	parosctl --servers a,b,c inspect [--journal TENANT/JOURNAL]
//
// Exit codes: 0 ok, 1 no server reachable, 2 bad arguments, 3 refused or
// not served, 4 ambiguous (the call may still take effect).
//
// The data-plane and inspect commands go through package client only: one
// client.Dial per invocation, then the Journal handle's raw calls (which
// follow redirects, ask other servers and back off), a Reader, or
// Client.Inspect. parosctl itself never retries. init talks to the Machine
// service (cell formation), which the client library does not cover.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
)

const defaultTimeout = 5 * time.Second

const (
	exitOK          = 0
	exitUnreachable = 1
	exitBadArgs     = 2
	exitRefused     = 3
	exitAmbiguous   = 4
)

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

func fail(code int, format string, args ...any) error {
	return exitError{code, fmt.Errorf(format, args...)}
}

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		code := exitBadArgs
		var ee exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		fmt.Fprintln(os.Stderr, "parosctl:", err)
		os.Exit(code)
	}
}

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "parosctl",
		Short:         "operate and use a paros cell",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.servers, "servers", os.Getenv("PAROSCTL_SERVERS"), "comma-separated server addresses (or PAROSCTL_SERVERS)")
	root.PersistentFlags().BoolVar(&g.json, "json", false, "print JSON")
	root.PersistentFlags().DurationVar(&g.timeout, "timeout", defaultTimeout, "per-call timeout")
	root.AddCommand(initCmd(g), writeCmd(g), readCmd(g), tailCmd(g), truncateCmd(g), setLeaderCmd(g), inspectCmd(g))
	return root
}

// globals are the root command's flags.
type globals struct {
	servers string
	json    bool
	timeout time.Duration
}

func (g *globals) addrs() ([]string, error) {
	var out []string
	for _, a := range strings.Split(g.servers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, fail(exitBadArgs, "no servers: pass --servers or set PAROSCTL_SERVERS")
	}
	return out, nil
}

// ctx bounds one call by --timeout.
func (g *globals) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), g.timeout)
}

// dial opens the invocation's one Client: it waits up to --timeout for a
// server to answer. The caller closes the Client.
func (g *globals) dial() (*client.Client, error) {
	addrs, err := g.addrs()
	if err != nil {
		return nil, err
	}
	ctx, cancel := g.ctx()
	defer cancel()
	c, err := client.Dial(ctx, addrs)
	if err != nil {
		return nil, dialError(err)
	}
	return c, nil
}

// dialError maps client.Dial's error: no server answered (1), or an
// address list Dial refuses (2).
func dialError(err error) error {
	if errors.Is(err, client.ErrNoServer) {
		return fail(exitUnreachable, "no server answered: %v", err)
	}
	return fail(exitBadArgs, "%v", err)
}

func (g *globals) print(human string, v any) {
	if g.json {
		enc := json.NewEncoder(os.Stdout)
		_ = enc.Encode(v)
		return
	}
	fmt.Println(human)
}
