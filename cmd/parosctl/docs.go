package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/internal/clidoc"
)

// docs prints the command reference, docs/reference/cli.md, generated
// from the command tree (TestReferenceIsCurrent keeps the file current).

// docsRefresh is the command that regenerates docs/reference/cli.md.
const docsRefresh = "go run ./cmd/parosctl docs > docs/reference/cli.md"

// docsIntro opens the reference.
const docsIntro = `Every parosctl command, its flags, examples and the JSON it prints with
` + "`-o json`" + `. The guide to using them is [docs/guide/cli.md](../guide/cli.md).`

func docsCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "docs",
		Short:  "print the command reference in Markdown (docs/reference/cli.md)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), reference())
			return err
		},
	}
}

// reference is the Markdown of docs/reference/cli.md, from a fresh tree.
func reference() string {
	return clidoc.Markdown(newRoot(), docsIntro, docsRefresh)
}
