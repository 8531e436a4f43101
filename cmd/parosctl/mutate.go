package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// The mutating commands: write, truncate and set-leader. Each sends one
// raw call through the Journal handle, which follows redirects and asks
// the other servers; the verdict is printed as verdictLine says.

func writeCmd(g *globals) *cobra.Command {
	var leader string
	var seq uint64
	var multi bool
	cmd := &cobra.Command{
		Use:   "write JOURNAL RECORD...",
		Short: "append records (claims the journal with a fresh uuid unless --leader is given)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			req := journal.WriteRequest{Journal: id}
			for _, r := range args[1:] {
				req.Records = append(req.Records, []byte(r))
			}
			if !multi {
				if req.Leader, err = parseUUID(leader); err != nil {
					return err
				}
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			j := c.Journal(id)
			if !multi {
				if req.Leader, req.Seq, err = g.fenceAt(j, req.Leader, journal.Seq(seq)); err != nil {
					return err
				}
			}
			ctx, cancel := g.ctx()
			defer cancel()
			r, err := j.Write(ctx, req)
			line, code, err := settle(id, r, err)
			if err != nil {
				return err
			}
			if req.Leader.IsSet() {
				line += " leader_uuid=" + formatUUID(req.Leader)
			}
			g.print(line, map[string]any{"verdict": replyJSON(r), "leader_uuid": formatUUID(req.Leader)})
			return exitWith(code, line)
		},
	}
	cmd.Flags().StringVar(&leader, "leader", "", "writer uuid (32 hex digits); default: claim with a fresh one")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "position the batch must land at (default: the tail)")
	cmd.Flags().BoolVar(&multi, "multi", false, "multi-writer journal: unfenced write")
	return cmd
}

// fenceAt returns the uuid and position of a fenced write. With no uuid it
// claims the journal first (claim); with no position it takes the tail, as
// the claim left it or as read.
func (g *globals) fenceAt(j *client.Journal, leader journal.LeaderUUID, seq journal.Seq) (journal.LeaderUUID, journal.Seq, error) {
	if leader.IsSet() && seq != 0 {
		return leader, seq, nil
	}
	view, err := g.currentView(j)
	if err != nil {
		return leader, seq, err
	}
	if !leader.IsSet() {
		if leader, view, err = g.claim(j, view.Leader); err != nil {
			return leader, seq, err
		}
	}
	if seq == 0 {
		seq = view.NextSeq
	}
	return leader, seq, nil
}

// claim takes the journal's writer fence with a fresh uuid, by one
// SetLeader from old (the leader read in force), and returns the uuid and
// the view the claim left: no other writer can move its NextSeq.
func (g *globals) claim(j *client.Journal, old journal.LeaderUUID) (journal.LeaderUUID, journal.View, error) {
	u := client.RandomUUIDs()
	ctx, cancel := g.ctx()
	defer cancel()
	r, err := j.SetLeader(ctx, journal.SetLeaderRequest{New: u, Old: old})
	line, code, err := settle(j.ID(), r, err)
	if err != nil {
		return u, journal.View{}, err
	}
	if r.Outcome.Kind != journal.LeaderSet {
		return u, journal.View{}, exitError{max(code, exitRefused), fmt.Errorf("claim: %s", line)}
	}
	return u, r.Outcome.View, nil
}

func truncateCmd(g *globals) *cobra.Command {
	var upTo uint64
	var leader string
	var multi bool
	cmd := &cobra.Command{
		Use:   "truncate JOURNAL --up-to N",
		Short: "drop every position below N (decided by consensus, fenced like a write)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			if upTo == 0 {
				return fail(exitBadArgs, "--up-to is required")
			}
			req := journal.TruncateRequest{Journal: id, UpTo: journal.Seq(upTo)}
			if !multi {
				if req.Leader, err = parseUUID(leader); err != nil {
					return err
				}
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			j := c.Journal(id)
			if !multi && !req.Leader.IsSet() {
				view, err := g.currentView(j)
				if err != nil {
					return err
				}
				req.Leader = view.Leader
			}
			ctx, cancel := g.ctx()
			defer cancel()
			r, err := j.Truncate(ctx, req)
			line, code, err := settle(id, r, err)
			if err != nil {
				return err
			}
			g.print(line, map[string]any{"verdict": replyJSON(r)})
			return exitWith(code, line)
		},
	}
	cmd.Flags().Uint64Var(&upTo, "up-to", 0, "first position still needed")
	cmd.Flags().StringVar(&leader, "leader", "", "writer uuid (default: the leader in force, as read)")
	cmd.Flags().BoolVar(&multi, "multi", false, "multi-writer journal: unfenced truncate")
	return cmd
}

func setLeaderCmd(g *globals) *cobra.Command {
	var newU, oldU string
	cmd := &cobra.Command{
		Use:   "set-leader JOURNAL",
		Short: "move the writer fence (compare-and-set)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			req := journal.SetLeaderRequest{Journal: id}
			if req.New, err = parseUUID(newU); err != nil {
				return err
			}
			if !req.New.IsSet() {
				req.New = client.RandomUUIDs()
			}
			if req.Old, err = parseUUID(oldU); err != nil {
				return err
			}
			c, err := g.dial()
			if err != nil {
				return err
			}
			defer c.Close()
			j := c.Journal(id)
			if oldU == "" {
				view, err := g.currentView(j)
				if err != nil {
					return err
				}
				req.Old = view.Leader
			}
			ctx, cancel := g.ctx()
			defer cancel()
			r, err := j.SetLeader(ctx, req)
			line, code, err := settle(id, r, err)
			if err != nil {
				return err
			}
			g.print(line+" new="+formatUUID(req.New), map[string]any{"verdict": replyJSON(r), "new": formatUUID(req.New)})
			return exitWith(code, line)
		},
	}
	cmd.Flags().StringVar(&newU, "new", "", "new writer uuid (default: fresh)")
	cmd.Flags().StringVar(&oldU, "old", "", "writer believed in force (default: as read; 'none' for unset)")
	return cmd
}
