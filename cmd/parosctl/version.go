package main

import (
	"github.com/spf13/cobra"

	"github.com/parosdb/paros/internal/buildinfo"
)

// version prints the build of this parosctl (runtime/debug.ReadBuildInfo).

func versionCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print parosctl's version: module version, VCS revision and time, Go version",
		Example: `  parosctl version
  parosctl version -o json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			in := buildinfo.Read("parosctl")
			g.print(in.Text(), in)
			return nil
		},
	}
	return withSchema(cmd, buildinfo.Info{}, false)
}
