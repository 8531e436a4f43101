/*
Package paxos is the Multi-Paxos of one journal, written sans-IO: it reads no
clock, draws no random number, opens no socket and starts no goroutine, and
it reaches the disk only through ports its caller implements (Storage,
ColdLog, ScrubLog). Everything it decides comes out as values the caller
acts on.

# The Node

A Node is one journal's state at one process: its acceptor (the durable
promise and one record per slot), its proposer (following, campaigning or
leading) and its learner (the chosen log and the fold of journal.Apply over
it). NewNode boots it from a Storage port that the caller's store fills from
disk, always as a follower: leadership is never durable, so a restart is an
abdication. A replica node (Config.Replica) runs the learner alone and never
votes.

The Node is driven like etcd raft's RawNode. Inputs go in through methods:

  - Step(msg) for every message addressed to the node,
  - Tick() once per logical tick (the caller owns the clock),
  - Propose(entry) and ProposeControl(cmd) for a client's Write, Truncate or
    SetLeader, which report whether a round was opened and at which slot,
  - QuorumRead(ctx) to open a linearizable read.

Effects come out in a Ready. The loop, for each node:

 1. While HasReady reports true, take rd := n.Ready(). Only one Ready is out
    at a time: a second Ready before Advance panics.
 2. Persist rd.Writes, in order, after every earlier batch's writes. When
    rd.MustSync is set the batch holds an op that must be synced (a promise,
    a vote, a truncation); a batch of relaxed ops only (the chosen index,
    the scrub cursor) may be written without a sync.
 3. Send rd.Messages only once this batch and every earlier batch of the
    node are durable. A Promise or an Accepted that leaves before the write
    recording it is durable can un-make a decision after a crash. The one
    exception is a message whose EarlyOK method reports true (an Accept of a
    leader's own ballot, a PreRead, a CatchUpRequest): it promises nothing
    and may leave at once.
 4. Once the batch is durable, report it with n.MarkDurable(rd.Batch): its
    records may then leave the node's hot window (cold.go).
 5. Answer the client calls parked on rd.Applied: each entry is a newly
    applied slot, in slot order, with the command decided there and the
    Outcome the fold gave it. A call whose slot was decided for another
    command is ambiguous to its client.
 6. Answer rd.ReadStates after the Applied entries of the same batch.
 7. Call n.Advance(). The Ready's slices belong to the node and are reused
    from then on: a caller that persists asynchronously copies them first.
 8. If WantsElectionTimeout reports true, hand the node a freshly jittered
    timeout with SetElectionTimeout (at least Options.ElectionTicks).

If ContractFault or StorageFault reports an error, the node met input it
refused to act on (a peer that broke the Paxos contract) or could not read a
record back from its store: take nothing more from it, drop it and boot the
journal again from its store. Package host is the production driver: it
pipelines persistence and keeps the order above per journal (host/journal.go,
drain and release). ExampleNode is the smallest driver that is still correct.

# Roles by file

	file                          what it holds
	----------------------------  -------------------------------------------------
	node.go                       Node: boot, Step, Tick, Ready, Advance, the
	                              cross-role invariants checked after every input
	ready.go, writeop.go          Ready and its buckets; the durable ops and which
	                              of them need a sync (WriteOp.NeedsSync)
	message.go, roles.go          Message, EarlyOK; which role may send which
	                              message type (MaySend), shared with the gRPC edge
	validate.go                   the numeric bounds a message or a store must keep
	storage.go, cold.go,          the ports the store implements: boot state, cold
	scrub.go                      reads of evicted records, scrub reads
	acceptor.go                   Acceptor: the admission rule (admit), the promise,
	                              records, the floor, the vote watermark
	proposer.go, election.go,     the proposer's phases as types; the Phase-1 tally;
	node_election.go              campaigns, Promises, Nacks, winning an election
	rounds.go, tally.go,          the Phase-2 rounds, the one Phase-2 tally (Tally),
	node_phase2.go                Propose, Accept and Accepted
	node_replication.go           heartbeats, resends, Noop fill, CheckQuorum,
	                              learning from a Commit's watermark
	node_catchup.go               catch-up and TrimmedTo, the truncation cut
	learner.go, positions.go      Learner: the chosen log, the apply walk, reads by
	                              position and the index that finds them
	node_reads.go                 leaderless quorum reads (PreRead, PreReadAck)
	ctrl.go                       recovery of damaged records (CTRL)
	node_scrub.go                 the background scrubber and its repairs
	configuration.go,             Matchmaker Paxos: configurations per ballot,
	node_matchmaking.go,          matchmaking before Phase 1, reconfiguration and
	node_reconfigure.go,          garbage collection of old configurations, the
	node_generations.go,          matchmaker set's generations
	matchmaker_set.go
	node_handoff.go               cooperative handoff of a live leadership
	proxy.go, node_proxy.go       proxy leaders: the proxy, and the leader's side
	node_replica.go               the replica tier's learner-only node
	node_quiet.go                 quiescence of a settled journal
	decree.go                     single-decree Paxos over the same roles
	contract.go, errors.go,       contract faults, errors, counters and read-only
	counters.go, node_report.go   reports; slotlog.go is the chunked slot window

# What each part keeps safe

The acceptor admits a Prepare or an Accept only at or above its promise, and
admitting one raises the promise; the promise never goes down, within a boot
or across one. It refuses a Prepare below its floor with a Nack naming the
floor instead of a Promise that would report the dropped slots as empty, and a
record it can no longer read is reported as damaged, never as "nothing
accepted".

The proposer runs one Phase 1 over the whole suffix above its chosen index.
Its tally keeps, per slot, the report with the highest ballot, and on a
deployment with matchmakers it needs a Phase-1 quorum of every configuration
that may have chosen a value, never a quorum of their union. The new leader
re-proposes what it found and fills the holes with Noops; a slot where a
damaged record was reported is settled by the CTRL table instead.

A value is chosen only when Tally says so, and Tally asks quorum.System:
leader rounds, proxy leaders and decrees count through it alike. A leader
that hears no Phase-2 quorum for an election timeout steps down.

The learner applies slots strictly in order and is the only caller of
journal.Apply, so every node gives every slot the same Outcome. A truncation
moves the floor when the walk reaches it, and the state the dropped prefix
folded to is sealed in the same write.

Step drops a message whose sender's role may not send its type, a malformed
message, and an Accept, Commit or Heartbeat from a node that does not lead at
its ballot, before any of its fields moves the node.
*/
package paxos
