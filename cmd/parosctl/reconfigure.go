package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// The membership commands: journal reconfigure and journal retire,
// through the client library's admin.Client.Reconfigure and Retire. Both
// need a cell formed with matchmakers (the default of cell init) and a
// token with admin over every journal.

// reconfigureWait is how long reconfigure waits, in all, by default.
const reconfigureWait = time.Minute

func reconfigureCmd(g *globals) *cobra.Command {
	var members, quorumFlag string
	var wait time.Duration
	var keepMatchmakers bool
	cmd := &cobra.Command{
		Use:   "reconfigure JOURNAL --members M1,M2,M3 [--quorum majority|flexible:Q1:Q2|grid:RxC]",
		Short: "move a journal to another set of machines or quorum system (adding machines to the cell)",
		Long: `Move JOURNAL to the acceptor configuration --members with the quorum system
--quorum, while it keeps serving: writes stall for a round trip to the
matchmakers and one Phase 1, then go on.

Each member is a node id in hex, as 'parosctl cell machines' and 'parosctl
journal show' print them, or the host:port of a machine to add: an idle
'paros serve' on an empty data dir (same CA as the cell), which is admitted
to the cell first. A member left out stops voting; once 'parosctl journal
inspect' shows it retirable on the leader's line, 'parosctl journal retire'
lets it delete its copy.

--quorum is majority (the default), flexible:Q1:Q2 (Phase-1 quorums of Q1
members, Phase-2 quorums of Q2, Q1+Q2 > members), or grid:RxC (R*C members
laid out row-major by node id; a full row is a Phase-1 quorum, a full column
a Phase-2 quorum).

A machine this change removes that is one of the cell's matchmakers is
replaced in the matchmaker set by a machine this change adds (the next
generation of the set, as 'parosctl matchmakers set' would), so replacing a
machine is one command and leaves the cell as able to elect as it was
formed. --keep-matchmakers leaves the set alone.

It prints the configuration the leader runs and how long the change took,
then the matchmaker set when it moved. If moving the set fails after the
journal moved, the error names the 'parosctl matchmakers set' that finishes
it. Every step is idempotent: after a failure or a timeout (exit 4: the
change may still complete), run the same command again. A cell formed with
'cell init --plain' has no matchmakers and refuses (exit 3).

Exit codes: 0 the leader runs the configuration; 1 no machine reachable;
2 bad arguments; 3 refused (no matchmakers, an invalid configuration, an
unknown machine or journal, the credentials); 4 ambiguous (--wait ended
after the change started).`,
		Example: `  parosctl journal reconfigure demo --members "$(parosctl journal show demo -o json | jq -r '.members | join(",")')" --quorum flexible:2:2
  parosctl journal reconfigure demo --members "$(parosctl journal show demo -o json | jq -r '.members[:2] | join(",")'),127.0.0.1:7404"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			to := admin.Configuration{Members: addrList(members)}
			if len(to.Members) == 0 {
				return fail(exitBadArgs, "--members is required: node ids (hex) or host:port of new machines")
			}
			if to.Quorum, err = parseQuorum(quorumFlag); err != nil {
				return err
			}
			return g.withClient(func(c *client.Client) error {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				return g.reconfigure(ctx, c, id, to, keepMatchmakers)
			})
		},
	}
	cmd.Flags().BoolVar(&keepMatchmakers, "keep-matchmakers", false, "leave the matchmaker set alone when a removed machine is a matchmaker")
	cmd.Flags().StringVar(&members, "members", "", "the new members: node ids (hex) or host:port of machines to add")
	cmd.Flags().StringVar(&quorumFlag, "quorum", "majority", "majority, flexible:Q1:Q2 or grid:RxC")
	cmd.Flags().DurationVar(&wait, "wait", reconfigureWait, "how long to wait for the leader to run the configuration")
	return withSchema(cmd, reconfigureOut{}, false)
}

// reconfigure moves the journal id to the configuration to, then the
// matchmakers it removed (unless keep), and prints the outcome.
func (g *globals) reconfigure(ctx context.Context, c *client.Client, id journal.ID, to admin.Configuration, keep bool) error {
	start := time.Now()
	from, known := newestConfig(ctx, c, id)
	if err := admin.New(c).Reconfigure(ctx, id, to); err != nil {
		return membershipError(err)
	}
	elapsed := time.Since(start)
	out := reconfigureOut{Journal: id.String(), Members: to.Members, Quorum: quorumWord(to.Quorum), ElapsedMs: elapsed.Milliseconds()}
	st, ok := newestConfig(ctx, c, id)
	if ok {
		out.Members, out.Quorum = hexIDs(st.Members), quorumWord(st.Quorum)
		out.ConfigBallot, out.ConfigSince = st.ConfigBallot.String(), st.ConfigSince.String()
	}
	line := fmt.Sprintf("reconfigured %s members=%s quorum=%s", id, strings.Join(out.Members, ","), out.Quorum)
	if ok {
		line += fmt.Sprintf(" config=%s since=%s", out.ConfigBallot, out.ConfigSince)
	}
	line += fmt.Sprintf(" elapsed=%s", elapsed.Round(time.Millisecond))
	var next []admin.NodeID
	moved := false
	if ok && known && !keep {
		next, moved = movedMatchmakers(st.Matchmakers, from.Members, st.Members)
		// A rerun after a timeout finds the journal moved already: nothing
		// is removed now, so name matchmakers outside it.
		if out := outside(st.Matchmakers, st.Members); !moved && slices.Equal(from.Members, st.Members) && len(out) > 0 {
			g.warn("matchmakers %s serve no member of this journal; if this reconfiguration replaced them, move the set with 'parosctl matchmakers set'",
				strings.Join(hexIDs(out), ","))
		}
	}
	if !moved {
		g.print(line, out)
		return nil
	}
	set, err := setMatchmakers(ctx, c, hexIDs(next))
	if err != nil {
		g.print(line, out)
		// The journal moved; a rerun of this command finds nothing
		// removed. Say how to finish.
		return fmt.Errorf("%w (the journal moved; finish the matchmakers with 'parosctl matchmakers set %s')",
			err, strings.Join(hexIDs(next), ","))
	}
	out.Matchmakers = &set
	g.print(line+"\n"+matchmakersLine(set), out)
	return nil
}

// movedMatchmakers is the matchmaker set mm after a change from the
// members before to the members after: each matchmaker the change removed
// is replaced by a machine it added that is no matchmaker yet, in order. A
// removed matchmaker with no added machine left stays (the set never
// shrinks behind the operator's back). moved reports a change.
func movedMatchmakers(mm, before, after []admin.NodeID) ([]admin.NodeID, bool) {
	var added []admin.NodeID
	for _, m := range after {
		if !slices.Contains(before, m) && !slices.Contains(mm, m) {
			added = append(added, m)
		}
	}
	next := slices.Clone(mm)
	moved := false
	for i, m := range next {
		if len(added) > 0 && slices.Contains(before, m) && !slices.Contains(after, m) {
			next[i], added = added[0], added[1:]
			moved = true
		}
	}
	slices.Sort(next)
	return next, moved
}

// outside lists the members of mm not in members.
func outside(mm, members []admin.NodeID) []admin.NodeID {
	var out []admin.NodeID
	for _, m := range mm {
		if !slices.Contains(members, m) {
			out = append(out, m)
		}
	}
	return out
}

// newestConfig is the answer, among the servers dialled, that follows the
// newest configuration (the leader's when it is among them).
func newestConfig(ctx context.Context, c *client.Client, id journal.ID) (admin.MemberStatus, bool) {
	var best admin.MemberStatus
	found := false
	for _, st := range admin.New(c).Inspect(ctx, id) {
		if st.Err != nil || st.Role == "" {
			continue
		}
		if !found || best.ConfigSince.Less(st.ConfigSince) || st.Role == "leader" && best.ConfigSince == st.ConfigSince {
			best, found = st, true
		}
	}
	return best, found
}

func retireCmd(g *globals) *cobra.Command {
	var node, watermark string
	cmd := &cobra.Command{
		Use:   "retire JOURNAL --node NODE --gc-watermark R.N",
		Short: "let a machine a reconfiguration removed delete its copy of a journal",
		Long: `Ask machine --node (its node id in hex) to retire from JOURNAL: to delete its
copy, which a reconfiguration left out of the configuration. Pass the
consensus leader's --gc-watermark: 'parosctl journal inspect JOURNAL' prints
it on the leader's line (gc_watermark=R.N) once garbage collection is
effective, with the machines it made retirable (retirable=...).

The machine judges the request itself and refuses unless it is safe (exit 3,
naming why): leader or member (reconfigure it out first), stale (it has not
heard the configuration that removed it yet, or the watermark is not the
leader's current one: inspect again and retry), not_collected (wait for the
leader's garbage collection), plain (no matchmakers), unknown_journal (it
does not serve the journal: retired already). A retired machine never serves
the journal again.

Exit codes: 0 retired; 1 the machine is unreachable (nothing was sent);
2 bad arguments; 3 refused; 4 ambiguous (the request may have been
honoured: run it again, and unknown_journal then means it was).`,
		Example: `  parosctl journal inspect demo   # the leader's line: gc_watermark=R.N retirable=NODE
  parosctl journal retire demo --node "$(parosctl journal inspect demo -o json | jq -r '.[] | select(.gc_effective) | .retirable[0]')" \
    --gc-watermark "$(parosctl journal inspect demo -o json | jq -r '.[] | select(.gc_effective) | .gc_watermark')"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			n, err := parseNode(node)
			if err != nil {
				return err
			}
			w, err := parseBallot(watermark)
			if err != nil {
				return err
			}
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			return g.withCall(func(ctx context.Context, c *client.Client) error {
				if err := admin.New(c).Retire(ctx, id, n, w); err != nil {
					return membershipError(err)
				}
				g.print(fmt.Sprintf("retired node=%016x journal=%s gc_watermark=%s", n, id, w),
					retireOut{Journal: id.String(), Node: fmt.Sprintf("%016x", n), GCWatermark: w.String()})
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&node, "node", "", "node id of the machine to retire (hex, as journal inspect prints it)")
	cmd.Flags().StringVar(&watermark, "gc-watermark", "", "the leader's GC watermark, R.N as journal inspect prints it")
	return withSchema(cmd, retireOut{}, false)
}

// membershipError maps the error of Reconfigure or Retire to an exit code.
func membershipError(err error) error {
	var refused *admin.RetireRefusedError
	switch {
	case errors.Is(err, client.ErrDenied):
		return deniedError(err)
	case errors.Is(err, client.ErrNoServer):
		return fail(exitUnreachable, "unreachable: %v", err)
	case errors.Is(err, client.ErrAmbiguous):
		return fail(exitAmbiguous, "ambiguous: %v", err)
	case errors.As(err, &refused):
		return fail(exitRefused, "retire refused: %s", strings.TrimPrefix(refused.Error(), "paros/admin: retire refused: "))
	}
	return fail(exitRefused, "refused: %v", err)
}

// parseQuorum reads --quorum: majority, flexible:Q1:Q2 or grid:RxC.
func parseQuorum(s string) (admin.Quorum, error) {
	q, err := admin.ParseQuorum(s)
	if err != nil {
		return admin.Quorum{}, fail(exitBadArgs, "--quorum %q: want majority, flexible:Q1:Q2 or grid:RxC", s)
	}
	return q, nil
}

// quorumWord prints a quorum system as --quorum reads it.
func quorumWord(q admin.Quorum) string { return q.String() }
