// Command paros is the paros binary. This file holds only the root
// command; each subcommand lives in its own file beside it and registers
// itself in subcommands (mesh.go adds "mesh").
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// subcommands builds the root's subcommands; files of this package append
// to it from init.
var subcommands []func() *cobra.Command

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "paros",
		Short:         "paros: a replicated journal service",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	for _, sub := range subcommands {
		root.AddCommand(sub())
	}
	return root
}

func main() {
	if err := newRoot().Execute(); err != nil {
		code := 1
		var ec interface{ ExitCode() int }
		if errors.As(err, &ec) {
			code = ec.ExitCode()
		}
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(os.Stderr, "paros:", msg)
		}
		os.Exit(code)
	}
}
