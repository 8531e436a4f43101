package paxos

import (
	"errors"
	"fmt"
)

// ErrContract marks a peer that broke the Paxos contract: it reported two
// values at one (slot, ballot), or called a value chosen that contradicts
// a record at a higher ballot. Crash-fault Paxos cannot explain either;
// only a bug or a lying member produces them.
var ErrContract = errors.New("paros/paxos: a peer broke the Paxos contract")

// contract holds the first contract violation of an incarnation. The
// handler that meets one refuses to act on it (no vote, no learned value,
// no page folded) and raises it here; the node answers nothing more, and
// the driver drops the node and reboots the journal from its store, as
// after a crash before sync. Nothing of the violating batch leaves: not
// even its EarlyOK messages. This used to be a panic, which let one message
// from a member kill every journal of the process; now it ends one
// journal's incarnation, and the simulator, whose peers are honest, fails
// the seed on any violation.
type contract struct {
	fault error
}

// raise records a violation (the first one wins).
func (c *contract) raise(format string, args ...any) {
	if c.fault == nil {
		c.fault = fmt.Errorf("%w: %s", ErrContract, fmt.Sprintf(format, args...))
	}
}

// ContractFault is the first contract violation of this incarnation, or
// nil. A non-nil fault means the node met input it refused to act on: take
// no batch from it, drop the node and reboot the journal from its store.
func (n *Node) ContractFault() error { return n.contract.fault }
