// Package sim is paros's deterministic simulator: the production host/ and
// core/ code run under simulated time, network and disks, driven by one
// seeded PRNG on one goroutine, so a seed replays bit-for-bit.
//
// A world is drawn per seed (swarm testing): 3–6 acceptors, a quorum system,
// 1–3 journals, tunables above their floors, a fault mix. Chain clients drive
// the journals through the same request and reply types the server uses,
// folding every record into a hash chain. Oracles run as events happen, and
// every journal's client history is checked for linearizability
// (sim/lincheck). On some seeds the network holds one journal on every
// node for a while, and its siblings must keep committing (hold.go). On
// about a third, one journal is the cell's registry, written by rival
// coordinators through the shipped desk decisions (registry_desk.go) and
// folded by readers that apply it to themselves as
// member machines with the shipped registry.Follower
// (registry_member.go), and a data journal is deleted and sealed
// (registry.go); on another third, a journal is created during
// the chaos, each member formatting it at its own moment (create.go).
// After
// a chaos window comes a quiet tail in which every live node must
// converge. Gates record which recovery paths fired, so a sweep can
// require that each one did somewhere.
package sim
