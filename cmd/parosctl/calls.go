package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// verdictExit maps a verdict to an exit code and a line.
func verdictLine(v *pb.Verdict) (string, int) {
	st := v.GetState()
	state := fmt.Sprintf("leader=%s next_seq=%d first_seq=%d", formatUUID(st.GetLeader()), st.GetNextSeq(), st.GetFirstSeq())
	switch v.GetOutcome() {
	case pb.Outcome_OUTCOME_ACCEPTED, pb.Outcome_OUTCOME_DUPLICATE:
		return fmt.Sprintf("%s seq=%d count=%d %s", strings.ToLower(strings.TrimPrefix(v.GetOutcome().String(), "OUTCOME_")), v.GetSeq(), v.GetCount(), state), exitOK
	case pb.Outcome_OUTCOME_LEADER_SET, pb.Outcome_OUTCOME_TRIMMED, pb.Outcome_OUTCOME_NOOP:
		return fmt.Sprintf("%s %s", strings.ToLower(strings.TrimPrefix(v.GetOutcome().String(), "OUTCOME_")), state), exitOK
	case pb.Outcome_OUTCOME_NONE:
		if v.GetAmbiguous() {
			return fmt.Sprintf("ambiguous (%s): the call may still take effect; retry it identically", strings.ToLower(strings.TrimPrefix(v.GetRefusal().String(), "REFUSAL_"))), exitAmbiguous
		}
		return fmt.Sprintf("refused: %s", strings.ToLower(strings.TrimPrefix(v.GetRefusal().String(), "REFUSAL_"))), exitRefused
	case pb.Outcome_OUTCOME_UNHELD:
		return "ambiguous (unheld): this server cannot tell duplicate from refused", exitAmbiguous
	}
	return fmt.Sprintf("%s %s", strings.ToLower(strings.TrimPrefix(v.GetOutcome().String(), "OUTCOME_")), state), exitRefused
}

// mutate sends a mutating call to the servers, following redirects. While
// no server leads (an election is under way) it waits and asks again, up to
// the call timeout.
func (g *globals) mutate(call func(pb.JournalClient) (*pb.Verdict, error)) (*pb.Verdict, error) {
	deadline := time.Now().Add(g.timeout)
	var hint uint64
	var last error
	for time.Now().Before(deadline) {
		redirected := false
		for _, a := range g.order(hint) {
			c, err := g.conn(a)
			if err != nil {
				last = err
				continue
			}
			v, err := call(pb.NewJournalClient(c))
			if err != nil {
				if status.Code(err) == codes.InvalidArgument {
					return nil, fail(exitRefused, "%s", status.Convert(err).Message())
				}
				last = err
				continue
			}
			switch v.GetRefusal() {
			case pb.Refusal_REFUSAL_NOT_LEADER:
				if h := v.GetLeaderHint(); h != 0 && h != hint {
					hint, redirected = h, true
				}
				last = fmt.Errorf("%s does not lead", a)
				continue
			case pb.Refusal_REFUSAL_UNKNOWN_JOURNAL:
				last = fmt.Errorf("unknown journal at %s", a)
				continue
			case pb.Refusal_REFUSAL_BUSY:
				last = fmt.Errorf("%s is busy", a)
				continue
			}
			return v, nil
		}
		if !redirected {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if last == nil {
		last = errors.New("no server answered in time")
	}
	if status.Code(last) == codes.Unavailable {
		return nil, fail(exitUnreachable, "no server answered: %v", last)
	}
	return nil, fail(exitRefused, "no server leads the journal right now: %v", last)
}

// currentState reads the journal's view (a served read at its tail).
func (g *globals) currentState(id *pb.JournalId) (*pb.JournalState, error) {
	r, err := g.read(id, 1<<62, 1, 0)
	if err != nil {
		return nil, err
	}
	return r.GetState(), nil
}

// read asks every server in turn until one serves.
func (g *globals) read(id *pb.JournalId, from uint64, limit, wait uint32) (*pb.ReadReply, error) {
	addrs, err := g.addrs()
	if err != nil {
		return nil, err
	}
	var last error
	for _, a := range addrs {
		c, err := g.conn(a)
		if err != nil {
			last = err
			continue
		}
		ctx, cancel := g.ctx()
		r, err := pb.NewJournalClient(c).Read(ctx, &pb.ReadRequest{Journal: id, FromSeq: from, Limit: limit, WaitMs: wait})
		cancel()
		if err != nil {
			last = err
			continue
		}
		if r.GetUnknownJournal() {
			last = fmt.Errorf("unknown journal at %s", a)
			continue
		}
		if r.GetServed() {
			return r, nil
		}
		last = fmt.Errorf("%s did not serve the read", a)
	}
	if last != nil && strings.Contains(last.Error(), "did not serve") {
		return nil, fail(exitRefused, "no server served the read: %v", last)
	}
	return nil, fail(exitUnreachable, "no server answered: %v", last)
}

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
			recs := make([][]byte, 0, len(args)-1)
			for _, r := range args[1:] {
				recs = append(recs, []byte(r))
			}
			req := &pb.WriteRequest{Journal: id, Records: recs}
			if !multi {
				u, err := parseUUID(leader)
				if err != nil {
					return err
				}
				st, err := g.currentState(id)
				if err != nil {
					return err
				}
				if u == nil {
					u, err = g.claim(id, st.GetLeader())
					if err != nil {
						return err
					}
					st, err = g.currentState(id)
					if err != nil {
						return err
					}
				}
				req.Leader = u
				req.Seq = seq
				if seq == 0 {
					req.Seq = st.GetNextSeq()
				}
			}
			ctx, cancel := g.ctx()
			defer cancel()
			v, err := g.mutate(func(c pb.JournalClient) (*pb.Verdict, error) {
				r, err := c.Write(ctx, req)
				return r.GetVerdict(), err
			})
			if err != nil {
				return err
			}
			line, code := verdictLine(v)
			if req.Leader != nil {
				line += " leader_uuid=" + formatUUID(req.Leader)
			}
			g.print(line, map[string]any{"verdict": v.String(), "leader_uuid": formatUUID(req.Leader)})
			if code != exitOK {
				return exitError{code, fmt.Errorf("%s", line)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&leader, "leader", "", "writer uuid (32 hex digits); default: claim with a fresh one")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "position the batch must land at (default: the tail)")
	cmd.Flags().BoolVar(&multi, "multi", false, "multi-writer journal: unfenced write")
	return cmd
}

// claim takes the journal's writer fence with a fresh uuid.
func (g *globals) claim(id *pb.JournalId, old *pb.LeaderUuid) (*pb.LeaderUuid, error) {
	u := randomUUID()
	ctx, cancel := g.ctx()
	defer cancel()
	v, err := g.mutate(func(c pb.JournalClient) (*pb.Verdict, error) {
		r, err := c.SetLeader(ctx, &pb.SetLeaderRequest{Journal: id, NewLeader: u, OldLeader: old})
		return r.GetVerdict(), err
	})
	if err != nil {
		return nil, err
	}
	if v.GetOutcome() != pb.Outcome_OUTCOME_LEADER_SET {
		line, code := verdictLine(v)
		return nil, exitError{max(code, exitRefused), fmt.Errorf("claim: %s", line)}
	}
	return u, nil
}

func readCmd(g *globals) *cobra.Command {
	var from uint64
	var limit, wait uint32
	cmd := &cobra.Command{
		Use:   "read JOURNAL",
		Short: "read records from a position (a truncated range is reported as a gap)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			next, gap, err := g.readOnce(id, from, limit, wait)
			if err == nil && gap {
				// After the gap line, the page where the journal resumes.
				_, _, err = g.readOnce(id, next, limit, wait)
			}
			return err
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "records at most (0: the server's page)")
	cmd.Flags().Uint32Var(&wait, "wait-ms", 0, "long-poll the tail up to this long")
	return cmd
}

// readOnce prints one page (or the gap a truncation left, never silently)
// and returns the next position and whether it was a gap.
func (g *globals) readOnce(id *pb.JournalId, from uint64, limit, wait uint32) (uint64, bool, error) {
	r, err := g.read(id, from, limit, wait)
	if err != nil {
		return from, false, err
	}
	if r.GetTruncated() {
		first := r.GetState().GetFirstSeq()
		g.print(fmt.Sprintf("gap: positions [%d, %d) were truncated; resuming at %d", from, first, first),
			map[string]any{"gap_from": from, "resumed_at": first})
		return first, true, nil
	}
	for i, rec := range r.GetRecords() {
		g.print(fmt.Sprintf("%d\t%s", from+uint64(i), rec), map[string]any{"seq": from + uint64(i), "record": string(rec)})
	}
	return from + uint64(len(r.GetRecords())), false, nil
}

func tailCmd(g *globals) *cobra.Command {
	var from uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail JOURNAL",
		Short: "read to the tail; with -f keep following it",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			for {
				next, gap, err := g.readOnce(id, from, 0, 1000)
				if err != nil {
					return err
				}
				if next == from && !gap && !follow {
					return nil
				}
				from = next
			}
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following the tail")
	return cmd
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
			req := &pb.TruncateRequest{Journal: id, UpTo: upTo}
			if !multi {
				u, err := parseUUID(leader)
				if err != nil {
					return err
				}
				if u == nil {
					st, err := g.currentState(id)
					if err != nil {
						return err
					}
					u = st.GetLeader()
				}
				req.Leader = u
			}
			ctx, cancel := g.ctx()
			defer cancel()
			v, err := g.mutate(func(c pb.JournalClient) (*pb.Verdict, error) {
				r, err := c.Truncate(ctx, req)
				return r.GetVerdict(), err
			})
			if err != nil {
				return err
			}
			line, code := verdictLine(v)
			g.print(line, map[string]any{"verdict": v.String()})
			if code != exitOK {
				return exitError{code, fmt.Errorf("%s", line)}
			}
			return nil
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
			nu, err := parseUUID(newU)
			if err != nil {
				return err
			}
			if nu == nil {
				nu = randomUUID()
			}
			var ou *pb.LeaderUuid
			if oldU == "" {
				st, err := g.currentState(id)
				if err != nil {
					return err
				}
				ou = st.GetLeader()
			} else if ou, err = parseUUID(oldU); err != nil {
				return err
			}
			ctx, cancel := g.ctx()
			defer cancel()
			v, err := g.mutate(func(c pb.JournalClient) (*pb.Verdict, error) {
				r, err := c.SetLeader(ctx, &pb.SetLeaderRequest{Journal: id, NewLeader: nu, OldLeader: ou})
				return r.GetVerdict(), err
			})
			if err != nil {
				return err
			}
			line, code := verdictLine(v)
			g.print(line+" new="+formatUUID(nu), map[string]any{"verdict": v.String(), "new": formatUUID(nu)})
			if code != exitOK {
				return exitError{code, fmt.Errorf("%s", line)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&newU, "new", "", "new writer uuid (default: fresh)")
	cmd.Flags().StringVar(&oldU, "old", "", "writer believed in force (default: as read; 'none' for unset)")
	return cmd
}

func inspectCmd(g *globals) *cobra.Command {
	var jref string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "each server's facts, or a journal's consensus state on each server",
		RunE: func(_ *cobra.Command, _ []string) error {
			addrs, err := g.addrs()
			if err != nil {
				return err
			}
			req := &pb.InspectRequest{NodeOnly: true}
			if jref != "" {
				id, err := parseJournal(jref)
				if err != nil {
					return err
				}
				req = &pb.InspectRequest{Journal: id}
			}
			answered := 0
			for _, a := range addrs {
				c, err := g.conn(a)
				if err != nil {
					continue
				}
				ctx, cancel := g.ctx()
				r, err := pb.NewAdminClient(c).Inspect(ctx, req)
				cancel()
				if err != nil {
					fmt.Printf("%s\tunreachable: %v\n", a, status.Convert(err).Message())
					continue
				}
				answered++
				var js []string
				for _, j := range r.GetJournals() {
					js = append(js, formatJournal(j))
				}
				line := fmt.Sprintf("%s\tnode=%016x cell=%016x journals=%s", a, r.GetNodeId(), r.GetCellId(), strings.Join(js, ","))
				if jref != "" {
					line += fmt.Sprintf(" role=%s leader=%016x promised=%d.%d chosen=%d applied=%d floor=%d next_seq=%d first_seq=%d %s",
						r.GetRole(), r.GetLeaderHint(), r.GetPromised().GetRound(), r.GetPromised().GetNode(), r.GetChosenIndex(),
						r.GetApplied(), r.GetFirstSlot(), r.GetState().GetNextSeq(), r.GetState().GetFirstSeq(), r.GetRefusal())
				}
				g.print(line, r)
			}
			if answered == 0 {
				return fail(exitUnreachable, "no server answered")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&jref, "journal", "", "journal TENANT/JOURNAL")
	return cmd
}

func initCmd(g *globals) *cobra.Command {
	var members string
	var journals uint32
	cmd := &cobra.Command{
		Use:   "init --members a,b,c",
		Short: "form a cell over the founding members (resumes an interrupted formation)",
		RunE: func(_ *cobra.Command, _ []string) error {
			var ms []string
			for _, m := range strings.Split(members, ",") {
				if m = strings.TrimSpace(m); m != "" {
					ms = append(ms, m)
				}
			}
			if len(ms) == 0 {
				return fail(exitBadArgs, "--members is required")
			}
			var last error
			for _, a := range ms {
				c, err := g.conn(a)
				if err != nil {
					last = err
					continue
				}
				ctx, cancel := g.ctx()
				r, err := pb.NewMachineClient(c).CellInit(ctx, &pb.CellInitRequest{Members: ms, Journals: journals})
				cancel()
				if err != nil {
					last = err
					continue
				}
				if !r.GetInitialized() {
					return fail(exitRefused, "cell init refused: %s", r.GetRefusal())
				}
				var js []string
				for _, j := range r.GetPlan().GetJournals() {
					js = append(js, formatJournal(j))
				}
				g.print(fmt.Sprintf("cell=%016x journals=%s", r.GetPlan().GetCellId(), strings.Join(js, ",")), r.GetPlan())
				return nil
			}
			return fail(exitUnreachable, "no member answered: %v", last)
		},
	}
	cmd.Flags().StringVar(&members, "members", "", "founding members' addresses")
	cmd.Flags().Uint32Var(&journals, "journals", 1, "initial journals")
	return cmd
}
