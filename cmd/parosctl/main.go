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
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

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
