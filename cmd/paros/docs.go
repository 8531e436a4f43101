package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/internal/clidoc"
)

// paros docs prints the command reference, docs/reference/paros.md,
// generated from the command tree (TestReferenceIsCurrent keeps the file
// current).

// docsRefresh is the command that regenerates docs/reference/paros.md.
const docsRefresh = "go run ./cmd/paros docs > docs/reference/paros.md"

// docsIntro opens the reference.
const docsIntro = `Every paros command and its flags: serve runs a machine, dev a local
three-machine cell, cert makes the cell's credentials. The CLI that talks to
a running cell is parosctl: [cli.md](cli.md).`

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		return &cobra.Command{
			Use:    "docs",
			Short:  "print the command reference in Markdown (docs/reference/paros.md)",
			Hidden: true,
			Args:   cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprint(cmd.OutOrStdout(), reference())
				return err
			},
		}
	})
}

// reference is the Markdown of docs/reference/paros.md, from a fresh tree.
func reference() string {
	return clidoc.Markdown(newRoot(), docsIntro, docsRefresh)
}
