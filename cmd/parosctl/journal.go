package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
)

// The journal noun: its lifecycle by name (create, delete, list, show,
// here), its data (write, read, tail, truncate, claim) and its operations
// (handoff, reconfigure, retire, inspect). Each control-plane change is one
// client call, which carries one request id for all its retries, so a
// command that timed out (exit 4) may be run again: a second create of the
// same name answers name_taken only if the first landed.

// The journal command's help groups.
const (
	groupJournalLife = "life"
	groupJournalData = "data"
	groupJournalOps  = "ops"
)

func journalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "journal",
		Short: "create, write, read and operate journals",
		Long: `Journals: created and deleted by name; written under a writer fence, read
and tailed; truncated; their fence claimed; their consensus leadership and
membership moved; inspected on each server. JOURNAL is TENANT/NAME, NAME in
the default tenant, or an id TENANT/JOURNAL in hex.`,
	}
	cmd.AddGroup(
		&cobra.Group{ID: groupJournalLife, Title: "By name:"},
		&cobra.Group{ID: groupJournalData, Title: "Data:"},
		&cobra.Group{ID: groupJournalOps, Title: "Operations:"},
	)
	addTo(cmd, groupJournalLife, journalCreateCmd(g), journalDeleteCmd(g), journalListCmd(g), journalShowCmd(g))
	addTo(cmd, groupJournalData, longForm(writeCmd(g)), longForm(readCmd(g)), longForm(tailCmd(g)), truncateCmd(g), claimCmd(g))
	addTo(cmd, groupJournalOps, handoffCmd(g), reconfigureCmd(g), retireCmd(g), journalInspectCmd(g))
	return cmd
}

// longForm is a top-level shortcut (write, read, tail) built again for
// the journal noun, its examples spelled the long way.
func longForm(cmd *cobra.Command) *cobra.Command {
	cmd.Example = strings.ReplaceAll(cmd.Example, "parosctl "+cmd.Name()+" ", "parosctl journal "+cmd.Name()+" ")
	return cmd
}

func journalCreateCmd(g *globals) *cobra.Command {
	var members int
	var on, quorumFlag, writer string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "create a journal (NAME is TENANT/NAME, or NAME in the default tenant)",
		Long: `Create a journal by name. The cell coordinator places it on the least loaded
up machines, spread over failure domains (--members N, default 3 or every up
machine when fewer), or exactly on --on ID,ID,ID; the command returns once the
journal answers a read.

--quorum is majority (the default), flexible:Q1:Q2 or grid:RxC; --writer is
single (one fenced writer at a time, the default) or multi (unfenced
appenders).`,
		Example: `  parosctl journal create orders
  parosctl tenant create shop && parosctl journal create shop/orders --quorum flexible:2:2
  parosctl journal create events --writer multi`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			var opts []admin.CreateOption
			if members > 0 {
				opts = append(opts, admin.WithMembers(members))
			}
			if on != "" {
				var ids []admin.NodeID
				for _, s := range strings.Split(on, ",") {
					id, err := parseNode(s)
					if err != nil {
						return err
					}
					ids = append(ids, id)
				}
				opts = append(opts, admin.WithMemberIDs(ids...))
			}
			if quorumFlag != "" {
				q, err := parseQuorum(quorumFlag)
				if err != nil {
					return err
				}
				opts = append(opts, admin.WithQuorum(q))
			}
			switch writer {
			case "", "single":
			case "multi":
				opts = append(opts, admin.WithMultiWriter())
			default:
				return fail(exitBadArgs, "--writer %q: want single or multi", writer)
			}
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				info, err := admin.New(c).CreateJournal(ctx, args[0], opts...)
				if err != nil {
					return controlExit(err)
				}
				g.print(journalLine(info), journalOutOf(info))
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&members, "members", 0, "how many acceptors (default 3, or every up machine when fewer)")
	cmd.Flags().StringVar(&on, "on", "", "exactly these machines (node ids in hex, comma-separated)")
	cmd.Flags().StringVar(&quorumFlag, "quorum", "", "majority | flexible:Q1:Q2 | grid:RxC")
	cmd.Flags().StringVar(&writer, "writer", "single", "single | multi")
	return withSchema(cmd, journalOut{}, false)
}

func journalDeleteCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "delete a journal: fenced (no append is accepted after it), then its stores removed",
		Example: `  parosctl journal delete orders
  parosctl journal delete shop/orders`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := admin.New(c).DeleteJournal(ctx, args[0]); err != nil {
					return controlExit(err)
				}
				g.print("deleted "+args[0], deletedOut{Deleted: args[0]})
				return nil
			})
		},
	}
	return withSchema(cmd, deletedOut{}, false)
}

func journalListCmd(g *globals) *cobra.Command {
	var tenant string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the journals (of one tenant with --tenant)",
		Example: `  parosctl journal list
  parosctl journal list --tenant shop -o table`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				js, err := admin.New(c).Journals(ctx, tenant)
				if err != nil {
					return controlExit(err)
				}
				g.printJournals(js)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's journals")
	return withSchema(cmd, []journalOut{}, false)
}

// printJournals prints js as a list: text lines, table rows, or JSON.
func (g *globals) printJournals(js []admin.JournalInfo) {
	var lines []string
	var rows [][]string
	out := []journalOut{}
	for _, j := range js {
		o := journalOutOf(j)
		lines = append(lines, journalLine(j))
		rows = append(rows, []string{j.Tenant + "/" + j.Name, o.ID, strings.Join(o.Members, ","), o.Quorum, writerWord(j), stateWord(j)})
		out = append(out, o)
	}
	g.printList(lines, []string{"JOURNAL", "ID", "MEMBERS", "QUORUM", "WRITER", "STATE"}, rows, out)
}

func journalShowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "show a journal's id, its placement, and where it runs now if a reconfiguration moved it",
		Long: `show prints what the registry holds of a journal (its id, the machines it was placed on
when created, its quorum system and writer mode), then asks the journal's members which
configuration it runs on now: when a reconfiguration moved it off its placement, the line
ends with serving=MEMBERS quorum=Q (the JSON's "serving").`,
		Example:           `  parosctl journal show demo`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				tenant, name := client.SplitName(args[0])
				js, err := admin.New(c).Journals(ctx, tenant)
				if err != nil {
					return controlExit(err)
				}
				for _, j := range js {
					if j.Name == name {
						o, line := journalOutOf(j), journalLine(j)
						if s := servingOf(ctx, c, j); s != nil {
							o.Serving = s
							line += fmt.Sprintf(" serving=%s quorum=%s", strings.Join(s.Members, ","), s.Quorum)
						}
						g.print(line, o)
						return nil
					}
				}
				return fail(exitRefused, "journal %s/%s: no journal has that name", tenant, name)
			})
		},
	}
	return withSchema(cmd, journalOut{}, false)
}

// servingOf asks the journal's members for the configuration they follow
// and returns it when it differs from the placement: the leader's answer,
// or else the one at the highest configuration ballot. Nil when it is the
// placement, or when no member answered (the registry's line stands).
func servingOf(ctx context.Context, c *client.Client, j admin.JournalInfo) *servingOut {
	var best *admin.MemberStatus
	for _, st := range admin.New(c).Inspect(ctx, j.ID) {
		if st.Err != nil || len(st.Members) == 0 {
			continue
		}
		if best == nil || st.Role == "leader" || (best.Role != "leader" && best.ConfigBallot.Less(st.ConfigBallot)) {
			best = &st
		}
	}
	if best == nil {
		return nil
	}
	same := slices.Equal(slices.Sorted(slices.Values(best.Members)), slices.Sorted(slices.Values(j.Members))) &&
		quorumWord(best.Quorum) == quorumWord(j.Quorum)
	if same {
		return nil
	}
	return &servingOut{Members: hexIDs(best.Members), Quorum: quorumWord(best.Quorum)}
}

func journalLine(j admin.JournalInfo) string {
	return fmt.Sprintf("%s/%s id=%s members=%s quorum=%s writer=%s state=%s",
		j.Tenant, j.Name, j.ID, nodeList(j.Members), quorumWord(j.Quorum), writerWord(j), stateWord(j))
}

func writerWord(j admin.JournalInfo) string {
	if j.Multi {
		return "multi"
	}
	return "single"
}

func stateWord(j admin.JournalInfo) string {
	if j.Deleting {
		return "deleting"
	}
	return "live"
}

// controlExit maps a control-plane error to its exit: refused (3) for a
// decided refusal or the credentials, ambiguous (4) when the change may
// still land, unreachable (1) when no server answered.
func controlExit(err error) error {
	switch {
	case errors.Is(err, client.ErrAmbiguous):
		return fail(exitAmbiguous, "%v (the change may have landed: check with journal list or tenant list before running it again)", err)
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer) && !errors.Is(err, client.ErrNoControlPlane):
		return fail(exitUnreachable, "%v", err)
	}
	return fail(exitRefused, "%v", err)
}
