// Package election elects a leader among candidates over a multi-writer
// journal: every candidate appends its records to the journal (a
// client.Appender), every watcher folds the journal in log order with the
// same pure rule (Fold), and so every watcher agrees on each term's
// leader. The winner then governs some other, single-writer journal by
// installing its uuid there with SetLeader (Govern): that fence, not the
// election, is what keeps two leaders from both writing.
//
// # Records (frozen)
//
// A record is the 8-byte magic "\x00PRSELC\x01" (Magic) followed by a
// protobuf paros.v1.ElectionRecord (api/proto/paros/v1/election.proto):
// a term, the candidate's uuid, and one of Campaign{interface},
// Renew{interface} or Resign{successor}. Records without the magic are not
// the election's and are ignored, so the journal may carry other traffic;
// records with the magic that do not decode strictly (unknown fields
// included: a watcher that skipped one could fold differently) are
// Unreadable and change nothing.
//
// # The rules
//
// Term starts at 0 with no leader. The first Campaign for Term+1 wins term
// Term+1, whether or not the current leader is alive: any other Campaign
// (a loser, a duplicate, a late one) is stale. A Renew by the leader of the
// current term refreshes it; a Resign by it ends its leadership (the term
// stays, the successor it names is noted); any other Renew or Resign is
// stale. The Fold doc has the rules in full, including how a fold resumes
// after a truncated range. Appends are at-least-once (an ambiguous append
// may land twice, or late): under these rules a duplicate or late record
// is stale and harmless.
//
// A candidate (Election.Campaign) appends a Campaign for Term+1 only once
// it has read to the tail and sees no leader, a resignation (at once if it
// is the named successor, else after a lease), or no renewal for Lease by
// its own clock (plus the caller's Jitter). The winner renews every
// RenewEvery; it considers itself deposed once its fold shows another term
// or leader, or no renewal of its own landed within Lease.
//
// # Safety and liveness
//
// The election is a liveness mechanism. The lease is a hint: clocks, pauses
// and slow reads can make a watcher campaign while the leader still lives,
// and the first Campaign for Term+1 then wins regardless, so for a moment
// two processes may each believe they lead. Nothing here may be used as a
// safety input: not Status.Mine, not Leading, not the lease.
//
// Safety comes from the governed journal's fence. The winner installs its
// election uuid on the journal it governs with SetLeader (Govern: a
// client.Writer whose Claim uses that uuid), which moves the fence from
// whichever leader held it; from then on the journal itself refuses every
// write fenced by an earlier leader (client.ErrSuperseded), whatever that
// leader believes. A deposed leader learns it at its next write. Each
// Election leads at most once, with a uuid of its own, so a term's fence is
// never installed again after another's.
//
// # Compaction
//
// After CompactAfter records above the floor, the leader truncates the
// election journal up to its latest renewal that its fold accepted. A
// multi-writer journal accepts an unfenced Truncate from anyone (the
// journal's rules); client.Appender has no Truncate, so the Election sends
// the Journal handle's raw Truncate with no uuid, judged by a sans-IO
// multi-writer Writer. A renewal is its own checkpoint: it names the term,
// the leader and its interface, so a watcher that meets the truncated range
// (a *client.GapError) jumps its fold, adopts that renewal, and is from
// there in the very state of a watcher that read the whole log. The
// journal must not be truncated anywhere else: a watcher past any other
// cut waits for the next renewal before it judges anything (and campaigns
// only once one anchored it).
//
// # Use
//
//  1. Make a multi-writer journal for the election (client.WithMultiWriter
//     at creation) and a Client of the cell.
//  2. Per candidacy, New(c, electionJournal, Interface(addr)): a fresh
//     Election, with a fresh uuid (crypto/rand unless UUID is given).
//  3. Campaign(ctx) blocks until this Election wins a term; meanwhile
//     Status (and Changed) tell who leads and where it is reached.
//  4. On a win, Govern(ctx, governedJournal) and write through the Writer
//     it returns. Stop when the Writer says ErrSuperseded, or when
//     Status().Mine turns false (a hint that it is about to).
//  5. Resign(ctx, successor) to hand on promptly (a successor named there
//     campaigns at once), or Close to stop renewing and let the lease run
//     out. Either way that Election is done: New another to stand again.
//
// Nothing here reads a clock except the driver (Election); Fold is pure,
// and the library draws no randomness but the default candidate uuid.
package election
