package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// cell inspect and journal inspect: one line (or JSON object) per server,
// through admin.Client.Inspect, which asks every server dialled.

func cellInspectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "each server's facts: node id, cell, journals",
		Long: `Print one line per server: its node id, its cell and the journals it serves.
A server that does not answer is listed as unreachable. -o json adds the
cell's machines with their addresses (replicas and proxies marked); -o table
prints the same as text.`,
		Example: `  parosctl cell inspect
  parosctl cell inspect -o json`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error { return g.inspect(journal.ID{}) },
	}
	return withSchema(cmd, []inspectOut{}, false)
}

func journalInspectCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inspect JOURNAL",
		Short: "a journal's consensus state on each server",
		Long: `Print one line per server with JOURNAL's consensus state on it: its role, the
consensus leader it follows, its promise, chosen and applied slots, and the
journal's positions; the configuration it follows (members as node ids,
quorum); and on a cell with matchmakers, the configuration's ballot
(config=R.N), the ballot of the reconfiguration that introduced its members
(since=R.N, 0.0000000000000000 for the founding one) and the matchmakers. Once the leader's
garbage collection is effective, the leader's line also has gc_watermark=R.N
and retirable=...: the machines 'parosctl journal retire' may retire, with
that watermark. -o table prints the same as text.`,
		Example: `  parosctl journal inspect demo
  parosctl journal inspect demo -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			return g.inspect(id)
		},
	}
	return withSchema(cmd, []inspectOut{}, false)
}

// inspect prints each server's answer about id (zero: the machines' facts
// only).
func (g *globals) inspect(id journal.ID) error {
	addrs, err := g.addrs()
	if err != nil {
		return err
	}
	opts, err := g.clientOptions()
	if err != nil {
		return err
	}
	dctx, dcancel := g.ctx()
	c, err := client.Dial(dctx, addrs, opts...)
	dcancel()
	if errors.Is(err, client.ErrNoServer) && g.output != "json" {
		for _, a := range addrs { // Dial asked every server: none answered
			fmt.Fprintf(g.out, "%s\tunreachable: %v\n", a, err)
		}
	}
	if err != nil {
		return g.dialError(err)
	}
	defer c.Close()
	ctx, cancel := g.ctx()
	defer cancel()
	answered := 0
	var lines []string
	out := []inspectOut{}
	for _, st := range admin.New(c).Inspect(ctx, id) {
		refusal := ""
		switch {
		case errors.Is(st.Err, client.ErrUnknownJournal):
			refusal = "unknown_journal"
		case st.Err != nil:
			lines = append(lines, fmt.Sprintf("%s\tunreachable: %v", st.Addr, st.Err))
			out = append(out, inspectOut{Addr: st.Addr, Error: st.Err.Error()})
			continue
		}
		answered++
		lines = append(lines, inspectLine(st, id, refusal))
		out = append(out, inspectOutOf(st, refusal))
	}
	g.print(joinLines(lines), out)
	if answered == 0 {
		return fail(exitUnreachable, "no server answered")
	}
	return nil
}

// inspectLine is one server's line: its machine's facts, and its facts
// about journal id unless id is zero. refusal is "" or "unknown_journal".
func inspectLine(st admin.MemberStatus, id journal.ID, refusal string) string {
	js := make([]string, len(st.Journals))
	for i, j := range st.Journals {
		js[i] = j.String()
	}
	line := fmt.Sprintf("%s\tnode=%016x cell=%016x journals=%s", st.Addr, st.NodeID, st.CellID, strings.Join(js, ","))
	if id == (journal.ID{}) {
		return line
	}
	line += fmt.Sprintf(" role=%s leader=%016x promised=%d.%d chosen=%d applied=%d floor=%d next_seq=%d first_seq=%d",
		st.Role, st.LeaderHint, st.Promised.Round, st.Promised.Node, st.ChosenIndex,
		st.Applied, st.FirstSlot, st.View.NextSeq, st.View.FirstSeq)
	if st.Role != "" {
		line += fmt.Sprintf(" members=%s quorum=%s", nodeList(st.Members), quorumWord(st.Quorum))
	}
	if len(st.Matchmakers) > 0 {
		line += fmt.Sprintf(" config=%s since=%s matchmakers=%s@g%d", st.ConfigBallot, st.ConfigSince, nodeList(st.Matchmakers), st.MatchmakerGeneration)
	}
	if len(st.Unrecoverable) > 0 {
		line += fmt.Sprintf(" UNRECOVERABLE=%v", st.Unrecoverable)
	}
	if st.GCEffective {
		retirable := nodeList(st.Retirable)
		if retirable == "" {
			retirable = "none"
		}
		line += fmt.Sprintf(" gc_watermark=%s retirable=%s", st.GCWatermark, retirable)
	}
	return strings.TrimSpace(line + " " + refusal)
}

// inspectOut is one server's answer (cell inspect, journal inspect).
type inspectOut struct {
	Addr     string   `json:"addr" doc:"the server's address"`
	Error    string   `json:"error,omitempty" doc:"why it did not answer (the other fields are then absent)"`
	Refusal  string   `json:"refusal,omitempty" doc:"unknown_journal: it does not serve the journal"`
	Node     string   `json:"node,omitempty" doc:"its node id"`
	Cell     string   `json:"cell,omitempty" doc:"its cell's id"`
	Journals []string `json:"journals,omitempty" doc:"the journals it serves, TENANT/JOURNAL in hex"`
	// The journal's facts (journal inspect).
	Role        string    `json:"role,omitempty" doc:"leader, candidate, follower or replica"`
	Leader      string    `json:"leader,omitempty" doc:"the consensus leader it last heard (node id)"`
	Promised    string    `json:"promised,omitempty" doc:"the ballot it promised, ROUND.NODE"`
	ChosenIndex uint64    `json:"chosen_index,omitempty" doc:"every slot up to it is chosen"`
	Applied     uint64    `json:"applied,omitempty" doc:"every slot up to it is folded"`
	FirstSlot   uint64    `json:"first_slot,omitempty" doc:"the first slot retained"`
	State       *stateOut `json:"state,omitempty" doc:"the journal's state as it folded it"`
	Members     []string  `json:"members,omitempty" doc:"the configuration's acceptors (node ids)"`
	Quorum      string    `json:"quorum,omitempty" doc:"its quorum system, as --quorum reads it"`
	Quarantined bool      `json:"quarantined,omitempty" doc:"the journal is quarantined on this server"`
	// Matchmaker Paxos facts (absent on a plain cell).
	ConfigBallot         string           `json:"config_ballot,omitempty" doc:"the configuration's ballot"`
	ConfigSince          string           `json:"config_since,omitempty" doc:"the reconfiguration that introduced the members (0.0: the founding one)"`
	Matchmakers          []string         `json:"matchmakers,omitempty" doc:"the matchmakers (node ids)"`
	MatchmakerGeneration uint64           `json:"matchmaker_generation,omitempty" doc:"their set's generation"`
	GCEffective          bool             `json:"gc_effective,omitempty" doc:"the leader's garbage collection is effective"`
	GCWatermark          string           `json:"gc_watermark,omitempty" doc:"the leader's GC watermark, as journal retire --gc-watermark takes it"`
	Retirable            []string         `json:"retirable,omitempty" doc:"the machines journal retire may retire (node ids)"`
	Unrecoverable        []uint64         `json:"unrecoverable,omitempty" doc:"slots lost beyond the fault budget (the journal halts)"`
	Machines             []inspectMachine `json:"machines,omitempty" doc:"every machine of the cell"`
}

type inspectMachine struct {
	Node    string `json:"node" doc:"its node id"`
	Addr    string `json:"addr" doc:"its address"`
	Replica bool   `json:"replica,omitempty" doc:"a replica machine"`
	Proxy   bool   `json:"proxy,omitempty" doc:"a proxy leader"`
}

func inspectOutOf(st admin.MemberStatus, refusal string) inspectOut {
	out := inspectOut{Addr: st.Addr, Refusal: refusal, Node: fmt.Sprintf("%016x", st.NodeID), Cell: fmt.Sprintf("%016x", st.CellID)}
	for _, j := range st.Journals {
		out.Journals = append(out.Journals, j.String())
	}
	for _, m := range st.Machines {
		out.Machines = append(out.Machines, inspectMachine{Node: fmt.Sprintf("%016x", m.NodeID), Addr: m.Addr, Replica: m.Replica, Proxy: m.Proxy})
	}
	if st.Role == "" {
		return out // node facts only, or a refusal
	}
	out.Role, out.Leader = st.Role, fmt.Sprintf("%016x", st.LeaderHint)
	out.Promised = st.Promised.String()
	out.ChosenIndex, out.Applied, out.FirstSlot = st.ChosenIndex, st.Applied, st.FirstSlot
	out.State = stateOf(st.View)
	out.Members, out.Quorum, out.Quarantined = hexIDs(st.Members), quorumWord(st.Quorum), st.Quarantined
	if len(st.Matchmakers) > 0 {
		out.ConfigBallot, out.ConfigSince, out.Matchmakers = st.ConfigBallot.String(), st.ConfigSince.String(), hexIDs(st.Matchmakers)
		out.MatchmakerGeneration = st.MatchmakerGeneration
	}
	out.Unrecoverable = st.Unrecoverable
	if st.GCEffective {
		out.GCEffective, out.GCWatermark, out.Retirable = true, st.GCWatermark.String(), hexIDs(st.Retirable)
	}
	return out
}
