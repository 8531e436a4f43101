package main

import (
	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// journal truncate and journal claim: one raw call each through the
// Journal handle, which follows redirects and asks the other servers; the
// verdict is printed as verdictLine says.

func truncateCmd(g *globals) *cobra.Command {
	var upTo uint64
	var fenceFlag string
	cmd := &cobra.Command{
		Use:   "truncate JOURNAL --up-to N",
		Short: "drop every position below N (decided by consensus, fenced like a write)",
		Long: `Drop every position of JOURNAL below --up-to: a reader that asks for them
gets a gap. It is decided by consensus and fenced like a write: it carries
--fence, by default the fence in force as read (truncating does not move the
fence, so the journal's writer keeps writing). A multi-writer journal takes
an unfenced truncate from anyone.

Exit codes: 0 trimmed; 1 no server reachable; 2 bad arguments; 3 refused
(truncate_refused: the fence moved between the read and the call, or
--fence is not in force); 4 ambiguous.`,
		Example: `  parosctl journal truncate demo --up-to 3
  parosctl journal truncate demo --up-to 3 --fence 0123456789abcdef0123456789abcdef`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			if upTo == 0 {
				return fail(exitBadArgs, "--up-to is required")
			}
			fence, err := parseUUID(fenceFlag)
			if err != nil {
				return err
			}
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			return g.withClient(func(c *client.Client) error {
				j := c.Journal(id)
				if !fence.IsSet() {
					view, err := g.currentView(j)
					if err != nil {
						return err
					}
					fence = view.Leader // unset on a multi-writer journal: unfenced
				}
				ctx, cancel := g.ctx()
				defer cancel()
				r, err := j.Truncate(ctx, journal.TruncateRequest{Journal: id, Leader: fence, UpTo: journal.Seq(upTo)})
				line, code, err := settle(id, r, err)
				if err != nil {
					return err
				}
				g.print(line, truncateOut{Journal: id.String(), Verdict: verdictOf(r)})
				return exitWith(code, line)
			})
		},
	}
	cmd.Flags().Uint64Var(&upTo, "up-to", 0, "first position still needed")
	cmd.Flags().StringVar(&fenceFlag, "fence", "", "writer fence, 32 hex digits (default: the fence in force, as read)")
	return withSchema(cmd, truncateOut{}, false)
}

func claimCmd(g *globals) *cobra.Command {
	var newU, oldU string
	cmd := &cobra.Command{
		Use:   "claim JOURNAL",
		Short: "move the writer fence to a new uuid (compare-and-set): the old writer's writes are refused",
		Long: `Claim JOURNAL's writer fence: one compare-and-set of the fence from --old
(default: the fence in force, as read; 'none' for a journal never claimed) to
--fence (default: a fresh uuid). Once it wins, every write carrying the old
fence is refused: this is how a new writer takes over, and how an operator
stops one. The fence claimed is remembered in the fence book, so that a
later 'parosctl write' without --fence writes with it. A multi-writer
journal has no fence (wrong_mode, exit 3).

Exit codes: 0 fence_set; 1 no server reachable; 2 bad arguments; 3 refused
(fence_refused: --old was not in force; wrong_mode); 4 ambiguous.`,
		Example: `  parosctl journal claim demo
  parosctl journal claim demo --old none --fence 0123456789abcdef0123456789abcdef`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			u, err := parseUUID(newU)
			if err != nil {
				return err
			}
			if !u.IsSet() {
				u = client.RandomUUIDs()
			}
			old, err := parseUUID(oldU)
			if err != nil {
				return err
			}
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			return g.withClient(func(c *client.Client) error {
				j := c.Journal(id)
				if oldU == "" {
					view, err := g.currentView(j)
					if err != nil {
						return err
					}
					old = view.Leader
				}
				r, err := g.setFence(c, j, u, old)
				if err != nil {
					return err
				}
				line, code := verdictLine(r)
				g.print(line, claimOut{Journal: id.String(), Fence: formatUUID(u), Verdict: verdictOf(r)})
				return exitWith(code, line)
			})
		},
	}
	cmd.Flags().StringVar(&newU, "fence", "", "the new writer fence, 32 hex digits (default: a fresh one)")
	cmd.Flags().StringVar(&oldU, "old", "", "the fence believed in force (default: as read; 'none' for never claimed)")
	return withSchema(cmd, claimOut{}, false)
}
