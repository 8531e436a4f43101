package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/internal/buildinfo"
)

// paros version prints the build of this binary, as parosctl version does.
func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var output string
		cmd := &cobra.Command{
			Use:   "version",
			Short: "print paros's version: module version, VCS revision and time, Go version",
			Example: `  paros version
  paros version -o json`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				in := buildinfo.Read("paros")
				switch output {
				case "text":
					fmt.Fprintln(cmd.OutOrStdout(), in.Text())
					return nil
				case "json":
					return json.NewEncoder(cmd.OutOrStdout()).Encode(in)
				}
				return exitError{exitBadConfig, fmt.Errorf("-o %q: want text or json", output)}
			},
		}
		cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
		return cmd
	})
}
