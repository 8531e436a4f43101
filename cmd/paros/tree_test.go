package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a user runs says what it does in one line and shows how it
// is run, as parosctl's do: a command without an Example is one a reader
// must guess the flags of.
func TestEveryCommandHasShortAndExample(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if !c.Runnable() || c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if strings.TrimSpace(c.Short) == "" {
			t.Errorf("%s: no Short", c.CommandPath())
		}
		if !strings.Contains(c.Example, c.CommandPath()) {
			t.Errorf("%s: Example %q never runs %q", c.CommandPath(), c.Example, c.CommandPath())
		}
	}
	walk(newRoot())
}
