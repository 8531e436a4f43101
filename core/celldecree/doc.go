// Package celldecree is the decree that forms a cell: the founding
// machines choose one plan (the cell's id, its members, its journals, its
// matchmakers, replicas and proxies) by single-decree Paxos, and each
// founder that votes formats the plan's stores and serves it.
//
// The Paxos is the core's (paxos.DecreeAcceptor admits a ballot,
// paxos.DecreeProposer adopts the highest vote and counts Phase 2 through
// the one Phase-2 tally); this package adds what forming a cell needs
// around it, sans-IO, so that the machine's gRPC handlers and the
// simulator run the same rules:
//
//   - Acceptor is a founder's side: the bounds on a ballot, membership,
//     and the rule that a vote is final (a founder that voted serves its
//     plan and refuses every other, other_cell).
//   - Proposer is the initiator's side: Phase 1 at every founder, a step
//     ladder for a founder whose promise a caller pushed far below the
//     ballot, Phase 2 at every founder, a bounded number of ballots.
//
// Why Phase 1 is every founder. A founder's vote is final, where a
// DecreeAcceptor would vote again at a higher ballot. The decree stays
// safe because every Phase 1 meets every vote (the Phase-1 quorum is all
// founders, the Phase-2 quorum a majority: they intersect), so a proposer
// always proposes the plan already voted and no honest proposer asks a
// founder to vote for a second plan. With a majority Phase 1, a founder
// outside the first majority to answer could hold a vote the proposer
// never met and be left alone in a cell of its own.
//
// The caller persists before it answers: an Acceptor step reports what to
// write (Effect), and the answer may leave only once it is durable.
package celldecree
