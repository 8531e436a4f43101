// Package handovermodel is the model checker of matchmaker-set
// generations: a seeded, sans-IO world of real matchmaker.Matchmakers and
// real matchmaker.Reconfigurers, with model clients that matchmake the way
// a candidate does, driven through a lossy, duplicating, reordering
// mailbox.
//
// The world has a pool of five matchmakers, of which three found the set
// (generation 1), and three clients. Clients register ballots with
// configurations on two journals, raise watermarks, start handovers to
// random sets of the pool (several at once), finish a handover they meet
// stopped with no successor, and reboot to their bootstrap belief (the
// founding set), from where they must follow the chain. Matchmakers crash
// at each durability seam: before a batch is durable, after it is durable
// and before its answers leave, or idle; they reboot from their disk.
// Reconfigurers are killed mid-phase and abandon phases on their budget.
//
// After every step it checks, from the disks and the clients' completed
// registrations, never from a reconfigurer's own belief:
//
//  1. at most one set is authoritative per generation (every founding or
//     activated set, every chain link, every outcome a reconfigurer saw);
//  2. a chosen set is what a majority of its predecessor durably voted at
//     one decree ballot;
//  3. every registry a matchmaker activates carries the complete
//     reconstruction: every registration that completed at a matchmaker
//     quorum of an earlier generation at or above its watermark, its
//     effective configuration, and every watermark made effective;
//  4. of two completed registrations of a journal, the higher one's
//     history names the lower one's configuration unless it is below the
//     watermark, across generations;
//  5. when a set is chosen, every member durably holds its whole
//     bootstrap (or is already past it).
//
// A quiet tail then heals the world and requires convergence: every
// client believes the newest chosen set, and a majority of it is active.
// Reach counts each path so a sweep can require that all of them fired.
//
// The model lives in test files: it draws from a seeded PRNG, which the
// core's own code may not.
package handovermodel
