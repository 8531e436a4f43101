// Package sansio holds every decision of the paros client library, written
// sans-IO: the types build requests and absorb replies, and never send,
// wait, read a clock or draw a random number. Package client wraps them in
// gRPC calls and goroutines; the simulator's chain workload drives the very
// same types over simulated calls and streams, so the sweep proves the
// library a user runs.
//
// Four pieces:
//
//   - Reader is a cursor over one journal. Request builds the next Read,
//     Absorb judges its reply: records, a Gap (the range a truncation took,
//     reported and never skipped silently), Unavailable (ask another server),
//     UnknownJournal, or Stale (a reply for a position that is no longer the
//     cursor). The cursor never moves back.
//   - Writer is the owner of a single-writer journal. Claim builds a
//     SetLeader(fresh uuid, believed leader); AbsorbClaim adopts the fence.
//     Next builds a fenced Write at the next position and keeps it until a
//     verdict settles it; AbsorbWrite judges each reply. A verdict naming
//     another leader stops the writer. NewMultiWriter builds unfenced,
//     at-least-once writes for multi-writer journals.
//   - Resolve decides, from a read-back page, whether a write whose answer
//     was lost is in the log.
//   - Pipeline is the network Writer's scheduler over a single-writer
//     Writer: appends in; attempts to send, completions and timers out. It
//     coalesces appends into writes, keeps several out, resends an
//     ambiguous one identically and a refused one after the earlier ones.
//
// # Ambiguous outcomes
//
// A reply without a verdict is ambiguous: the call may or may not take
// effect. The library names every such case in its types, and fixes the
// caller's move for each one:
//
//	what happened                          result kind   error         what to do
//	-------------------------------------  ------------  ------------  -----------------------------------------
//	no answer (timeout, transport error)   Retry         ErrAmbiguous  resend the identical request
//	NoVerdict Lost or Unavailable          Retry         ErrAmbiguous  resend the identical request
//	Outcome Unheld (prefix not held)       Retry         ErrAmbiguous  resend the identical request
//	a verdict that does not fit the call   Retry         ErrAmbiguous  resend the identical request
//	a write below the floor                BelowFloor     ErrBelowFloor  nothing: the log no longer holds it
//	an ambiguous claim                     Retry         ErrAmbiguous  resend the identical SetLeader; a refusal
//	                                                                   naming its own New means it had won
//	an ambiguous unfenced write            Retry         ErrAmbiguous  resending may append the records twice
//	an ambiguous truncation                Retry         ErrAmbiguous  resend: a truncation is idempotent
//
// "Identical" means the same uuid, the same position and the same bytes:
// Writer.Pending and Writer.Claiming return the exact requests to resend.
// A fenced retry is safe because the journal's log is its own dedup table:
// it answers Duplicate when an earlier attempt landed. Resolve answers the
// same question by reading the position back.
//
// Pass the zero journal.Reply to an Absorb method when a call got no answer.
//
// Requests are plain journal types (journal.WriteRequest and friends), so
// each Absorb method takes the request it answers: a reply is always judged
// against the exact call that produced it.
package sansio
