package main

import "github.com/parosdb/paros/mesh/cli"

// The mesh commands: `paros mesh …` (see package mesh/cli).
func init() { subcommands = append(subcommands, cli.Command) }
