// Command parosctl is paros's operator and client CLI, shaped like etcdctl
// and the nats CLI: a noun, then a verb, then the journal as a positional
// argument.
//
//	parosctl journal create|delete|list|show|write|read|tail|truncate|claim|handoff|reconfigure|retire|inspect
//	parosctl tenant create|delete|list|show
//	parosctl cell init|machines|add-machine|drain|inspect
//	parosctl replicas set | proxies set | matchmakers set
//	parosctl write|read|tail JOURNAL ...   (shortcuts for journal write|read|tail)
//	parosctl version | completion bash|zsh|fish|powershell
//
// Every command dials over TLS trusting the cell's CA certificate (--ca, or
// PAROSCTL_CA) and presents a token (--token, or PAROSCTL_TOKEN; cell init
// needs one with admin over every journal). --insecure (or
// PAROSCTL_INSECURE=1) dials plaintext and sends no token, for a cell
// served with --insecure; with neither --ca nor --insecure parosctl refuses
// to run (exit 2). `paros dev` writes these variables into
// DIR/parosctl.env. -o text|json|table picks the output; each command's
// JSON is one Go type, documented in its help (clidoc.Schema).
//
// Exit codes: 0 ok, 1 no server reachable, 2 bad arguments, 3 refused or
// not served (the credentials too), 4 ambiguous (the call may still take
// effect).
//
// Every command goes through package client: one client.Dial per
// invocation, then the Journal handle's raw calls (which follow redirects,
// ask other servers and back off), a Reader, an Appender, or one of the
// Client's operator calls. parosctl itself never retries. cell init talks
// to the Machine service (cell formation), which the client library does
// not cover.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
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

// The root's help groups.
const (
	groupData  = "data"
	groupNouns = "nouns"
	groupSets  = "sets"
	groupOther = "other"
)

// rootLong is the root's long help: where the cell is, and the exit codes.
const rootLong = `parosctl operates and uses a paros cell: journals (create, write, read,
tail, truncate, claim the writer fence, move leadership and membership),
tenants, the cell's machines, and its replica, proxy and matchmaker sets.

It finds the cell through PAROSCTL_SERVERS (or --servers), trusts the CA in
PAROSCTL_CA (or --ca) and presents PAROSCTL_TOKEN (or --token); a cell
served with --insecure takes PAROSCTL_INSECURE=1 (or --insecure) instead.
'paros dev' writes these into DIR/parosctl.env.

JOURNAL is always a positional argument: a name TENANT/NAME, NAME in the
default tenant, or an id TENANT/JOURNAL in hex (id:TENANT/JOURNAL).
-o picks the output: text (the default), json (one documented schema per
command, in its help), table (aligned columns with a header for the list
commands; the same as text for the others).

Exit codes: 0 ok; 1 no server reachable; 2 bad arguments; 3 refused or not
served (the credentials too); 4 ambiguous (the call may still take effect).`

func newRoot() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "parosctl",
		Short:         "operate and use a paros cell",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	// The defaults from the environment are read at run time (setup), so
	// that the help and the reference show none of this shell's values.
	pf.StringVar(&g.servers, "servers", "", "comma-separated server addresses (default: PAROSCTL_SERVERS)")
	pf.StringVarP(&g.output, "output", "o", "text", "output format: text, json or table")
	pf.DurationVar(&g.timeout, "timeout", defaultTimeout, "per-call timeout")
	pf.StringVar(&g.ca, "ca", "", "the cell's CA certificate, ca.crt: dial over TLS (default: PAROSCTL_CA)")
	pf.StringVar(&g.token, "token", "", "bearer token from 'paros cert token' (default: PAROSCTL_TOKEN)")
	pf.BoolVar(&g.insecure, "insecure", false, "plaintext, no token: a cell served with --insecure (default: PAROSCTL_INSECURE=1)")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "json", "table"}, cobra.ShellCompDirectiveNoFileComp))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		g.setup(cmd)
		switch g.output {
		case "text", "json", "table":
			return nil
		}
		return fail(exitBadArgs, "-o %q: want text, json or table", g.output)
	}
	root.AddGroup(
		&cobra.Group{ID: groupData, Title: "Reading and writing (shortcuts for journal write, read and tail):"},
		&cobra.Group{ID: groupNouns, Title: "Journals, tenants and the cell:"},
		&cobra.Group{ID: groupSets, Title: "The cell's replica, proxy and matchmaker sets:"},
		&cobra.Group{ID: groupOther, Title: "Other commands:"},
	)
	addTo(root, groupData, writeCmd(g), readCmd(g), tailCmd(g))
	addTo(root, groupNouns, journalCmd(g), tenantCmd(g), cellCmd(g))
	addTo(root, groupSets, replicasCmd(g), proxiesCmd(g), matchmakersCmd(g))
	addTo(root, groupOther, versionCmd(g), docsCmd())
	root.SetHelpCommandGroupID(groupOther)
	root.SetCompletionCommandGroupID(groupOther)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	decorateBuiltins(root)
	return root
}

// addTo adds cmds to parent in the help group group.
func addTo(parent *cobra.Command, group string, cmds ...*cobra.Command) {
	for _, c := range cmds {
		c.GroupID = group
		parent.AddCommand(c)
	}
}

// decorateBuiltins gives cobra's own commands (help, completion and its
// shells) the examples every command has.
func decorateBuiltins(root *cobra.Command) {
	examples := map[string]string{
		"help": `  parosctl help journal write
  parosctl journal write --help`,
		"completion": `  source <(parosctl completion bash)
  parosctl completion zsh > "${fpath[1]}/_parosctl"
  parosctl completion fish > ~/.config/fish/completions/parosctl.fish`,
		"bash":       `  source <(parosctl completion bash)`,
		"zsh":        `  parosctl completion zsh > "${fpath[1]}/_parosctl"`,
		"fish":       `  parosctl completion fish > ~/.config/fish/completions/parosctl.fish`,
		"powershell": `  parosctl completion powershell | Out-String | Invoke-Expression`,
	}
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = examples["help"]
		case "completion":
			c.Example = examples["completion"]
			for _, sh := range c.Commands() {
				sh.Example = examples[sh.Name()]
			}
		}
	}
}
