// This file checks the shape of parosctl's command tree: every runnable
// command has a Short and an Example, every one but cobra's own (help,
// completion) and the hidden docs documents its JSON (a schema type), the
// root's commands sit in help groups, and no flag is one the tree gave up
// (--journal, --json, --leader, --multi, a duration in --*-ms: JOURNAL is
// positional, -o json, --fence, durations as 2s).
package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// eachCommand calls f on every command of the tree under root, hidden
// ones too.
func eachCommand(root *cobra.Command, f func(*cobra.Command)) {
	f(root)
	for _, c := range root.Commands() {
		eachCommand(c, f)
	}
}

// builtin reports a command cobra makes (help, completion and its shells,
// the hidden __complete) or the hidden docs command.
func builtin(c *cobra.Command) bool {
	for p := c; p != nil; p = p.Parent() {
		switch p.Name() {
		case "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd, "docs":
			return true
		}
	}
	return false
}

func TestEveryCommandHasShortAndExample(t *testing.T) {
	eachCommand(newRoot(), func(c *cobra.Command) {
		if !c.Runnable() || c.Hidden {
			return
		}
		if strings.TrimSpace(c.Short) == "" {
			t.Errorf("%s: no Short", c.CommandPath())
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no Example", c.CommandPath())
		}
		if !strings.Contains(c.Example, c.Root().Name()+" ") {
			t.Errorf("%s: Example %q runs no %s", c.CommandPath(), c.Example, c.Root().Name())
		}
	})
}

func TestEveryCommandDocumentsItsJSON(t *testing.T) {
	eachCommand(newRoot(), func(c *cobra.Command) {
		if !c.Runnable() || builtin(c) {
			return
		}
		name := c.Annotations[schemaKey]
		if name == "" || schemaTypes[name] == nil {
			t.Errorf("%s: no JSON schema (withSchema)", c.CommandPath())
			return
		}
		if !strings.Contains(c.Long, "JSON output (-o json)") {
			t.Errorf("%s: the long help does not show the JSON schema", c.CommandPath())
		}
	})
}

func TestTheRootsCommandsAreGrouped(t *testing.T) {
	root := newRoot()
	for _, c := range root.Commands() {
		if !c.Hidden && c.Name() != cobra.ShellCompRequestCmd && c.Name() != cobra.ShellCompNoDescRequestCmd && c.GroupID == "" {
			t.Errorf("%s: in no help group", c.CommandPath())
		}
	}
	want := []string{"journal create", "journal delete", "journal list", "journal show", "journal write", "journal read",
		"journal tail", "journal truncate", "journal claim", "journal handoff", "journal reconfigure", "journal retire",
		"journal inspect", "tenant create", "tenant delete", "tenant list", "tenant show", "cell init", "cell machines",
		"cell add-machine", "cell drain", "cell inspect", "replicas set", "proxies set", "matchmakers set", "write", "read",
		"tail", "version", "completion bash"}
	for _, path := range want {
		c, rest, err := root.Find(strings.Fields(path))
		if err != nil || len(rest) > 0 || c.CommandPath() != "parosctl "+path {
			t.Errorf("parosctl %s: not a command (%v)", path, err)
		}
	}
	for _, gone := range []string{"init", "set-leader", "inspect", "reconfigure", "retire", "handoff", "truncate"} {
		if c, _, err := root.Find([]string{gone}); err == nil && c != root {
			t.Errorf("parosctl %s: still a top-level command (one name, one meaning)", gone)
		}
	}
}

func TestNoCommandTakesAFlagTheTreeGaveUp(t *testing.T) {
	eachCommand(newRoot(), func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			switch {
			case f.Name == "journal", f.Name == "json", f.Name == "leader", f.Name == "multi":
				t.Errorf("%s --%s: a flag the tree gave up", c.CommandPath(), f.Name)
			case strings.HasSuffix(f.Name, "-ms"):
				t.Errorf("%s --%s: durations are durations (--wait 2s), not milliseconds", c.CommandPath(), f.Name)
			}
		})
	})
}

func TestTheShortcutsAreTheJournalCommands(t *testing.T) {
	root := newRoot()
	for _, verb := range []string{"write", "read", "tail"} {
		short, _, err1 := root.Find([]string{verb})
		long, _, err2 := root.Find([]string{"journal", verb})
		if err1 != nil || err2 != nil || short.Use != long.Use || short.Long != long.Long ||
			short.Flags().FlagUsages() != long.Flags().FlagUsages() {
			t.Errorf("parosctl %s and parosctl journal %s differ", verb, verb)
		}
	}
}
