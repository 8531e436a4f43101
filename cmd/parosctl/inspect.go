package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

func inspectCmd(g *globals) *cobra.Command {
	var jref string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "each server's facts, or a journal's consensus state on each server",
		Long: `inspect prints one line per server: its node id, cell and journals. With
--journal it adds that journal's consensus state on the server: its role, the
leader it follows, its promise, chosen and applied slots, and the journal's
positions; the configuration it follows (members as node ids, quorum); and on
a cell with matchmakers, the configuration's ballot (config=R.N), the ballot
of the reconfiguration that introduced its members (since=R.N, 0.0 for the
founding one) and the matchmakers. Once the leader's garbage collection is
effective, the leader's line also has gc_watermark=R.N and retirable=...:
the machines 'parosctl retire' may retire, with that watermark.

--json prints one object per server with the same facts, and the cell's
machines with their addresses.`,
		RunE: func(_ *cobra.Command, _ []string) error {
			addrs, err := g.addrs()
			if err != nil {
				return err
			}
			var id journal.ID // zero: the machines' facts only
			if jref != "" {
				if id, err = parseJournal(jref); err != nil {
					return err
				}
			}
			opts, err := g.clientOptions()
			if err != nil {
				return err
			}
			dctx, dcancel := g.ctx()
			c, err := client.Dial(dctx, addrs, opts...)
			dcancel()
			if errors.Is(err, client.ErrNoServer) {
				for _, a := range addrs { // Dial asked every server: none answered
					fmt.Printf("%s\tunreachable: %v\n", a, err)
				}
			}
			if err != nil {
				return g.dialError(err)
			}
			defer c.Close()
			ctx, cancel := g.ctx()
			defer cancel()
			answered := 0
			for _, st := range c.Inspect(ctx, id) {
				refusal := ""
				switch {
				case errors.Is(st.Err, client.ErrUnknownJournal):
					refusal = "unknown_journal"
				case st.Err != nil:
					fmt.Printf("%s\tunreachable: %v\n", st.Addr, st.Err)
					continue
				}
				answered++
				g.print(inspectLine(st, id, refusal), inspectJSONOf(st, refusal))
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

// inspectLine is one server's line: its machine's facts, and its facts
// about journal id unless id is zero. refusal is "" or "unknown_journal".
func inspectLine(st client.MemberStatus, id journal.ID, refusal string) string {
	js := make([]string, len(st.Journals))
	for i, j := range st.Journals {
		js[i] = j.String()
	}
	line := fmt.Sprintf("%s\tnode=%016x cell=%016x journals=%s", st.Addr, st.NodeID, st.CellID, strings.Join(js, ","))
	if id == (journal.ID{}) {
		return line
	}
	line += fmt.Sprintf(" role=%s leader=%016x promised=%d.%d chosen=%d applied=%d floor=%d next_seq=%d first_seq=%d",
		st.Role, st.LeaderHint, st.PromisedRound, st.PromisedNode, st.ChosenIndex,
		st.Applied, st.FirstSlot, st.View.NextSeq, st.View.FirstSeq)
	if st.Role != "" {
		line += fmt.Sprintf(" members=%s quorum=%s", nodeList(st.Members), quorumWord(st.QuorumSpec))
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
	return line + " " + refusal
}

// inspectJSON is one server's answer as --json prints it (the keys of the
// Admin.Inspect reply).
type inspectJSON struct {
	Addr        string        `json:"addr"`
	Refusal     string        `json:"refusal,omitempty"`
	NodeID      uint64        `json:"node_id,omitempty"`
	CellID      uint64        `json:"cell_id,omitempty"`
	Journals    []journalJSON `json:"journals,omitempty"`
	Role        string        `json:"role,omitempty"`
	LeaderHint  uint64        `json:"leader_hint,omitempty"`
	Promised    *ballotJSON   `json:"promised,omitempty"`
	ChosenIndex uint64        `json:"chosen_index,omitempty"`
	Applied     uint64        `json:"applied,omitempty"`
	FirstSlot   uint64        `json:"first_slot,omitempty"`
	State       *stateJSON    `json:"state,omitempty"`
	Members     []uint64      `json:"members,omitempty"`
	Quorum      string        `json:"quorum,omitempty"`
	Quarantined bool          `json:"quarantined,omitempty"`
	// Matchmaker Paxos facts (absent on a plain cell); gc_watermark and
	// retirable on the leader once gc_effective.
	ConfigBallot *ballotJSON `json:"config_ballot,omitempty"`
	ConfigSince  *ballotJSON `json:"config_since,omitempty"`
	Matchmakers  []uint64    `json:"matchmakers,omitempty"`
	// MatchmakerGeneration is the generation of Matchmakers.
	MatchmakerGeneration uint64      `json:"matchmaker_generation,omitempty"`
	GCEffective          bool        `json:"gc_effective,omitempty"`
	GCWatermark          *ballotJSON `json:"gc_watermark,omitempty"`
	Retirable            []uint64    `json:"retirable,omitempty"`
	// Unrecoverable: slots lost beyond the fault budget (the journal halts).
	Unrecoverable []uint64 `json:"unrecoverable,omitempty"`
	// Every machine of the cell, with its address; replicas and proxies marked.
	Machines []machineJSON `json:"machines,omitempty"`
}

type machineJSON struct {
	NodeID  uint64 `json:"node_id"`
	Addr    string `json:"addr"`
	Replica bool   `json:"replica,omitempty"`
	Proxy   bool   `json:"proxy,omitempty"`
}

func ballotJSONOf(b client.Ballot) *ballotJSON { return &ballotJSON{Round: b.Round, Node: b.Node} }

type journalJSON struct {
	Tenant  uint64 `json:"tenant"`
	Journal uint64 `json:"journal"`
}

type ballotJSON struct {
	Round uint64 `json:"round"`
	Node  uint64 `json:"node"`
}

func inspectJSONOf(st client.MemberStatus, refusal string) inspectJSON {
	out := inspectJSON{Addr: st.Addr, Refusal: refusal, NodeID: st.NodeID, CellID: st.CellID}
	for _, j := range st.Journals {
		out.Journals = append(out.Journals, journalJSON{Tenant: j.Tenant, Journal: j.Journal})
	}
	for _, m := range st.Machines {
		out.Machines = append(out.Machines, machineJSON{NodeID: m.NodeID, Addr: m.Addr, Replica: m.Replica, Proxy: m.Proxy})
	}
	if st.Role == "" {
		return out // node facts only, or a refusal
	}
	out.Role, out.LeaderHint = st.Role, st.LeaderHint
	out.Promised = &ballotJSON{Round: st.PromisedRound, Node: st.PromisedNode}
	out.ChosenIndex, out.Applied, out.FirstSlot = st.ChosenIndex, st.Applied, st.FirstSlot
	out.State = viewJSON(st.View)
	out.Members, out.Quorum, out.Quarantined = st.Members, st.Quorum, st.Quarantined
	if len(st.Matchmakers) > 0 {
		out.ConfigBallot, out.ConfigSince, out.Matchmakers = ballotJSONOf(st.ConfigBallot), ballotJSONOf(st.ConfigSince), st.Matchmakers
		out.MatchmakerGeneration = st.MatchmakerGeneration
	}
	out.Unrecoverable = st.Unrecoverable
	if st.GCEffective {
		out.GCEffective, out.GCWatermark, out.Retirable = true, ballotJSONOf(st.GCWatermark), st.Retirable
	}
	return out
}
