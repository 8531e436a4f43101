package main

import (
	"fmt"

	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// The JSON every command prints with -o json: one Go type per command
// (withSchema puts its fields, from these declarations and their doc
// tags, in the command's help and in docs/reference/cli.md). Ids are hex
// strings as the text output prints them (node ids 16 digits, journal ids
// TENANT/JOURNAL), ballots "ROUND.NODE" as --gc-watermark reads them,
// records base64.

// journalOut is a journal of the registry (journal create, show; a row of
// journal list).
type journalOut struct {
	Tenant      string   `json:"tenant" doc:"the tenant's name"`
	Name        string   `json:"name" doc:"the journal's name in its tenant"`
	ID          string   `json:"id" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Members     []string `json:"members" doc:"the acceptors it was placed on when created (its placement)"`
	Quorum      string   `json:"quorum" doc:"the placement's quorum system: majority, flexible:Q1:Q2 or grid:RxC"`
	MultiWriter bool     `json:"multi_writer" doc:"a multi-writer journal (no writer fence)"`
	Deleting    bool     `json:"deleting" doc:"being deleted"`
	// Serving is set by journal show only, and only when a reconfiguration
	// moved the journal off its placement.
	Serving *servingOut `json:"serving,omitempty" doc:"journal show only: the configuration it runs on now, when a reconfiguration moved it off its placement"`
}

// servingOut is the configuration a journal runs on, as its leader (or the
// most advanced member that answered) follows it.
type servingOut struct {
	Members []string `json:"members" doc:"its acceptors now"`
	Quorum  string   `json:"quorum" doc:"their quorum system"`
}

func journalOutOf(j admin.JournalInfo) journalOut {
	return journalOut{Tenant: j.Tenant, Name: j.Name, ID: j.ID.String(), Members: hexIDs(j.Members),
		Quorum: quorumWord(j.Quorum), MultiWriter: j.Multi, Deleting: j.Deleting}
}

// deletedOut is the answer of journal delete and tenant delete.
type deletedOut struct {
	Deleted string `json:"deleted" doc:"the name deleted"`
}

// tenantOut is a tenant (tenant create; a row of tenant list).
type tenantOut struct {
	Name     string `json:"name" doc:"the tenant's name"`
	ID       string `json:"id" doc:"the tenant's id in hex"`
	Journals int    `json:"journals" doc:"how many journals it holds (0 on create)"`
}

// tenantShowOut is tenant show: a tenant and its journals.
type tenantShowOut struct {
	Name     string       `json:"name" doc:"the tenant's name"`
	ID       string       `json:"id" doc:"the tenant's id in hex"`
	Journals []journalOut `json:"journals" doc:"its journals, by name"`
}

// verdictOut is the verdict of a write, truncate or claim.
type verdictOut struct {
	Outcome   string    `json:"outcome" doc:"accepted, duplicate, refused, below_floor, fence_set, fence_refused, trimmed, truncate_refused, wrong_mode, unheld, or none"`
	Refusal   string    `json:"refusal,omitempty" doc:"why no verdict (outcome none): not_leader, lost, unavailable, busy, ..."`
	Ambiguous bool      `json:"ambiguous,omitempty" doc:"the call may still take effect"`
	Seq       uint64    `json:"seq,omitempty" doc:"where the batch landed (accepted, duplicate)"`
	Count     uint64    `json:"count,omitempty" doc:"how many records landed"`
	State     *stateOut `json:"state,omitempty" doc:"the journal's state the verdict carries"`
}

// stateOut is a journal's public state.
type stateOut struct {
	Fence    string `json:"fence" doc:"the writer fence in force, 32 hex digits (none: never claimed, or a multi-writer journal)"`
	NextSeq  uint64 `json:"next_seq" doc:"the position the next write takes"`
	FirstSeq uint64 `json:"first_seq" doc:"the first position not truncated"`
}

func stateOf(v journal.View) *stateOut {
	return &stateOut{Fence: formatUUID(v.Leader), NextSeq: uint64(v.NextSeq), FirstSeq: uint64(v.FirstSeq)}
}

func verdictOf(r journal.Reply) verdictOut {
	if r.Outcome.Kind == journal.OutcomeInvalid {
		return verdictOut{Outcome: "none", Refusal: noVerdictNames[r.NoVerdict], Ambiguous: r.Ambiguous()}
	}
	return verdictOut{Outcome: outcomeNames[r.Outcome.Kind], Ambiguous: r.Ambiguous(),
		Seq: uint64(r.Outcome.Seq), Count: r.Outcome.Count, State: stateOf(r.Outcome.View)}
}

// writeOut is journal write: one verdict per batch sent.
type writeOut struct {
	Journal string       `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Fence   string       `json:"fence" doc:"the fence the writes carried (none: a multi-writer journal)"`
	Claimed bool         `json:"claimed,omitempty" doc:"this run claimed the fence (a fresh one)"`
	Batches []verdictOut `json:"batches" doc:"each batch's verdict, in order (a write of more records than one call carries is several batches)"`
}

// truncateOut is journal truncate.
type truncateOut struct {
	Journal string     `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Verdict verdictOut `json:"verdict" doc:"the truncate's verdict"`
}

// claimOut is journal claim.
type claimOut struct {
	Journal string     `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Fence   string     `json:"fence" doc:"the fence claimed, 32 hex digits"`
	Verdict verdictOut `json:"verdict" doc:"the claim's verdict (fence_set when it won)"`
}

// recordOut is a record as read prints it.
type recordOut struct {
	Seq  uint64 `json:"seq" doc:"its position"`
	Data []byte `json:"data" doc:"its bytes"`
}

// gapOut is a truncated range a reader met.
type gapOut struct {
	From uint64 `json:"from" doc:"the first position truncated"`
	To   uint64 `json:"to" doc:"where reading resumed (first position after the gap)"`
}

// readOut is journal read: one page, and the page after a gap.
type readOut struct {
	Journal string      `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Records []recordOut `json:"records" doc:"the records read, in order"`
	Gap     *gapOut     `json:"gap,omitempty" doc:"a truncated range met before the records"`
	Next    uint64      `json:"next" doc:"the position to read from next (--from)"`
}

// tailLine is one line of journal tail: a record, or a gap.
type tailLine struct {
	Seq  uint64  `json:"seq,omitempty" doc:"a record's position (absent on a gap line)"`
	Data []byte  `json:"data,omitempty" doc:"a record's bytes (absent on a gap line and for an empty record)"`
	Gap  *gapOut `json:"gap,omitempty" doc:"a truncated range (a gap line)"`
}

// handoffOut is journal handoff.
type handoffOut struct {
	Journal   string `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Leader    string `json:"leader" doc:"the node id of the consensus leader now"`
	ElapsedMs int64  `json:"elapsed_ms" doc:"how long the handoff took"`
}

// reconfigureOut is journal reconfigure.
type reconfigureOut struct {
	Journal      string          `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Members      []string        `json:"members" doc:"the members the leader runs (node ids; as asked when no server was seen running them)"`
	Quorum       string          `json:"quorum" doc:"the quorum system the leader runs"`
	ConfigBallot string          `json:"config_ballot,omitempty" doc:"the configuration's ballot"`
	ConfigSince  string          `json:"config_since,omitempty" doc:"the ballot of the reconfiguration that introduced the members"`
	ElapsedMs    int64           `json:"elapsed_ms" doc:"how long the change took"`
	Matchmakers  *matchmakersOut `json:"matchmakers,omitempty" doc:"the matchmaker set, when the change moved it"`
}

// retireOut is journal retire.
type retireOut struct {
	Journal     string `json:"journal" doc:"the journal's id, TENANT/JOURNAL in hex"`
	Node        string `json:"node" doc:"the node id of the machine retired"`
	GCWatermark string `json:"gc_watermark" doc:"the watermark passed, ROUND.NODE"`
}

// matchmakersOut is matchmakers set (and the set a reconfigure moved).
type matchmakersOut struct {
	Generation uint64   `json:"generation" doc:"the set's generation"`
	Members    []string `json:"members" doc:"the matchmakers' node ids"`
	Activated  []string `json:"activated" doc:"the members that activated the set"`
	ElapsedMs  int64    `json:"elapsed_ms" doc:"how long the handover took"`
}

// machineSetOut is replicas set and proxies set.
type machineSetOut struct {
	Machines  []string `json:"machines" doc:"the addresses of the cell's replicas (or proxies) now; empty for none"`
	ElapsedMs int64    `json:"elapsed_ms" doc:"how long the change took"`
}

// cellInitOut is cell init.
type cellInitOut struct {
	Cell     string   `json:"cell" doc:"the cell's id in hex"`
	Journals []string `json:"journals" doc:"the unnamed journals of the plan (--journals), TENANT/JOURNAL in hex"`
}

// machineOut is a machine of the pool (cell machines, add-machine, drain).
type machineOut struct {
	Node          string `json:"node" doc:"the machine's node id"`
	Addr          string `json:"addr,omitempty" doc:"its address (cell drain leaves it out)"`
	State         string `json:"state" doc:"up or draining"`
	FailureDomain string `json:"failure_domain,omitempty" doc:"its failure domain"`
	Journals      int    `json:"journals" doc:"the journals placed on it (0 from add-machine and drain)"`
}

// cellMachinesOut is cell machines.
type cellMachinesOut struct {
	Machines    []machineOut `json:"machines" doc:"the machines of the pool"`
	Coordinator string       `json:"coordinator,omitempty" doc:"the elected coordinator's address"`
	Registry    string       `json:"registry" doc:"the registry's control journal id"`
	Election    string       `json:"election" doc:"the coordinator election's journal id"`
}

// hexIDs prints node ids as the text output does: 16 hex digits each.
func hexIDs(ids []admin.NodeID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%016x", id)
	}
	return out
}
