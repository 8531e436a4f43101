// Package registry is the fold of the cell's registry: the control journal
// whose entries (api/proto/paros/v1/registry.proto, RegistryEntry) name the
// cell's machines, its tenants, and its journals with their placements.
// The elected cell coordinator writes the entries, fenced by its uuid;
// every machine folds them alike. An entry is a request, not a decision:
// the fold decides its outcome from the folded state alone, so every
// machine that folds the same prefix reaches the same state and gives every
// request the same answer.
//
// The package is pure (no I/O, no goroutines, no clock, no randomness) and
// works on plain Go types that mirror the proto: core/ may not import the
// generated code, so decoding entries, encoding checkpoints and the
// checkpoint.Checkpointable adapter live in registrypb.
//
// # Decisions
//
// A request (the entries with a request id) is decided once. Its outcome,
// refusals included, is recorded under its request id, and a later entry
// with the same id reads it back and changes nothing: a caller that retries
// after an ambiguous answer gets the same answer. Rules are tried in order;
// the first that matches decides. "—" is an empty outcome kind.
//
//	entry            condition                                       outcome            change
//	---------------  ----------------------------------------------  -----------------  ---------------------------
//	RegisterMachine  node id 0, or address empty (or not UTF-8)      bad_request        none
//	                 unknown node                                    —                  added, up
//	                 known node                                      —                  address, domain updated
//	DrainMachine     unknown node                                    unknown_machine    none
//	                 known node                                      —                  draining
//	any request      empty request id                                bad_request        none, not recorded
//	                 request id already decided                      the recorded one   none
//	CreateTenant     name invalid (ValidName)                        bad_name           recorded
//	                 tenant id 0, live, or named by a tombstone      id_taken           recorded
//	                 name held by a tenant                           name_taken {t,0}   recorded
//	                 otherwise                                       created {t,0}      tenant added
//	DeleteTenant     no tenant of that name                          unknown_tenant     recorded
//	                 the tenant holds a live or deleting journal     tenant_not_empty   recorded
//	                 otherwise                                       deleted {t,0}      removed, {t,0} tombstoned
//	CreateJournal    no tenant of that name                          unknown_tenant     recorded
//	                 journal name invalid                            bad_name           recorded
//	                 name held by a live journal of the tenant       name_taken {id}    recorded
//	                 name held by a deleting journal of the tenant   name_deleting {id} recorded
//	                 journal id 0, or {t,id} live, deleting or gone  id_taken           recorded
//	                 placement invalid (below)                       bad_placement      recorded
//	                 otherwise                                       created {t,id}     live, created_at = position
//	DeleteJournal    no tenant of that name                          unknown_tenant     recorded
//	                 no live or deleting journal of that name        unknown_journal    recorded
//	                 otherwise (a deleting one too: idempotent)      deleted {t,id}     deleting
//	JournalGone      the journal is deleting                         —                  removed, tombstoned
//	                 anything else                                   bad_request        none
//
// A placement is invalid if it names no member, a member twice, a member
// that is not a registered machine that is up, a quorum system that
// quorum.New refuses over its members (majority; flexible with Q1, Q2;
// grid with rows × cols), or a writer mode other than single or multi.
//
// # Invariants
//
// Invariant: every machine that folds the same entries from the same state
// reaches the same state, byte for byte in its checkpoint, and the same
// outcomes.
// Invariant: a decided request's outcome never changes, and a repeat of it
// leaves the state as it was.
// Invariant: a journal id {tenant, journal} is created at most once; a
// tombstone is never removed, and a tenant id named by one is never
// created again.
// Invariant: a tenant or journal name is unique among the live tenants, and
// among the live and deleting journals of its tenant; every held name is
// valid (ValidName).
// Invariant: every member of a held journal's placement is a registered
// machine (machines are never removed), and the placement passes
// Placement.Check.
// Invariant: a tenant holding a live or deleting journal is never deleted.
// Invariant: Load(node) is the number of live or deleting journals whose
// placement names node.
// Invariant: At is the position after the last folded entry, and nothing
// but At depends on positions (created_at aside): a checkpoint equals the
// prefix it replaces.
//
// # The desk and the follower
//
// Two roles act around the fold, and their decisions live here too, so
// that the machine and the simulator run the same ones. The elected
// coordinator's desk (desk.go) judges a batch of control calls against its
// fold (Judge: denied, decided already, refused, or written), builds
// creations (BuildCreation, BuildTenant) and finishes deletions (a
// single-writer journal is sealed before its tombstone: NeedsSeal,
// Tombstones). Each member machine's Follower (follow.go) decides what a
// folded page asks of it: which journals to list and start, which to
// remove, and when its applied mark moves.
//
// # Limits
//
// The outcome table keeps every decided request and the tombstones every
// deleted id, with no bound: an id never comes back, and an answer must
// read back the same for as long as a caller may retry, which the registry
// cannot know. A request costs a few dozen bytes in a checkpoint, and a
// cell decides orders of magnitude fewer requests than it writes records.
// The size of one entry (the control journal bounds a record) is not this
// package's concern.
package registry
