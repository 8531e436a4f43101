package paxos

import (
	"errors"
	"fmt"
)

// Bounds on the numbers a message or a store may hand the core. They are
// far above anything an honest cell reaches (2^62 rounds at one election a
// millisecond is 146 million years) and far enough below 2^64 that no
// arithmetic on them can wrap: a campaign's round+1, a page's slot+k and a
// watermark's comparison all stay exact. A number above its bound is
// malformed, like a checksum that does not match: the message is dropped
// before any of its fields moves the node (highestSeen, the promise, the
// chosen index), and a store holding one is refused at boot.
//
// Frozen: the bounds are part of the wire contract; raising one is a
// protocol change.
const (
	// BallotRoundMax is the highest ballot round the core accepts.
	BallotRoundMax = 1 << 62
	// SlotMax is the highest slot number (and watermark) the core accepts.
	SlotMax = 1 << 62
)

// ErrMalformed marks a message whose fields are out of their bounds.
var ErrMalformed = errors.New("paros/paxos: malformed message")

// InRange reports whether b's round is at most BallotRoundMax.
func (b Ballot) InRange() bool { return b.Round <= BallotRoundMax }

// Validate checks every number m carries against its bound: every ballot
// (the message's, the refused one, each entry's, faulty record's and scrub
// entry's) and every slot (the message's, the page's next, the commit
// watermark, the read watermark, each entry's, vote's, faulty record's and
// scrub entry's). For Scrub and ScrubReply it also checks the page's shape
// (validateScrub), which is a property of the message alone, like a
// bound. It checks no protocol rule; the handlers do that. A nil error
// means the node may let m's ballot raise what it has seen.
func (m Message) Validate() error {
	if !m.Ballot.InRange() || !m.Refused.InRange() {
		return fmt.Errorf("%w: %s ballot round above %d", ErrMalformed, m.Type, uint64(BallotRoundMax))
	}
	if m.Slot > SlotMax || m.Next > SlotMax || m.Commit > SlotMax || m.Watermark > SlotMax {
		return fmt.Errorf("%w: %s slot above %d", ErrMalformed, m.Type, uint64(SlotMax))
	}
	if !m.Since.InRange() || !m.GC.InRange() || !m.Effective.Ballot.InRange() || !m.Prepared.InRange() {
		return fmt.Errorf("%w: %s configuration ballot round above %d", ErrMalformed, m.Type, uint64(BallotRoundMax))
	}
	if m.Refusal > MatchInactive {
		return fmt.Errorf("%w: %s refusal %d", ErrMalformed, m.Type, m.Refusal)
	}
	if m.Generation > GenerationMax {
		return fmt.Errorf("%w: %s matchmaker generation %d", ErrMalformed, m.Type, m.Generation)
	}
	if err := m.Successor.Validate(); err != nil {
		return fmt.Errorf("%w: %s successor: %v", ErrMalformed, m.Type, err)
	}
	for _, r := range m.History {
		if !r.Ballot.InRange() || r.Acceptors.IsZero() {
			return fmt.Errorf("%w: %s registration at %s", ErrMalformed, m.Type, r.Ballot)
		}
	}
	if !m.Effective.IsZero() && m.Effective.Acceptors.IsZero() {
		return fmt.Errorf("%w: %s effective configuration without acceptors", ErrMalformed, m.Type)
	}
	for _, e := range m.Entries {
		if e.Slot > SlotMax || !e.Ballot.InRange() {
			return fmt.Errorf("%w: %s entry at slot %d ballot %s out of range", ErrMalformed, m.Type, e.Slot, e.Ballot)
		}
	}
	for _, e := range m.Decided {
		if e.Slot > SlotMax || !e.Ballot.InRange() {
			return fmt.Errorf("%w: %s decided entry at slot %d ballot %s out of range", ErrMalformed, m.Type, e.Slot, e.Ballot)
		}
	}
	for _, v := range m.Votes {
		if v.Slot > SlotMax {
			return fmt.Errorf("%w: %s vote at slot %d out of range", ErrMalformed, m.Type, v.Slot)
		}
	}
	for _, f := range m.Faulty {
		if f.Slot > SlotMax || !f.Ballot.InRange() {
			return fmt.Errorf("%w: %s faulty record at slot %d ballot %s out of range", ErrMalformed, m.Type, f.Slot, f.Ballot)
		}
	}
	for _, e := range m.Scrub {
		if e.Slot > SlotMax || !e.Ballot.InRange() {
			return fmt.Errorf("%w: %s scrub entry at slot %d ballot %s out of range", ErrMalformed, m.Type, e.Slot, e.Ballot)
		}
	}
	switch m.Type {
	case MsgScrub, MsgScrubReply:
		return m.validateScrub()
	}
	return nil
}

// validateScrub checks the shape of a scrub page (scrub.go). Both types
// carry the scrubbing leader's ballot (never zero) and the page [Slot,
// Next): Slot >= 1, Next > Slot, at most ScrubPageSlotsMax slots. A
// ScrubReply carries at most ScrubPageSlotsMax entries, strictly ascending
// by slot, each inside the page, each with a non-zero ballot (the identity
// survives damage), and a damaged one with Hash 0. Validate has already
// bounded every number, so Next-Slot cannot wrap.
func (m Message) validateScrub() error {
	switch {
	case m.Ballot.IsZero():
		return fmt.Errorf("%w: %s without a ballot", ErrMalformed, m.Type)
	case m.Slot == 0:
		return fmt.Errorf("%w: %s page starts at slot 0", ErrMalformed, m.Type)
	case m.Next <= m.Slot:
		return fmt.Errorf("%w: %s page [%d, %d) ends at or below its start", ErrMalformed, m.Type, m.Slot, m.Next)
	case m.Next-m.Slot > ScrubPageSlotsMax:
		return fmt.Errorf("%w: %s page [%d, %d) spans %d slots, above %d",
			ErrMalformed, m.Type, m.Slot, m.Next, m.Next-m.Slot, ScrubPageSlotsMax)
	}
	if m.Type != MsgScrubReply {
		return nil
	}
	if len(m.Scrub) > ScrubPageSlotsMax {
		return fmt.Errorf("%w: %s page [%d, %d) with %d entries, above %d",
			ErrMalformed, m.Type, m.Slot, m.Next, len(m.Scrub), ScrubPageSlotsMax)
	}
	for i, e := range m.Scrub {
		switch {
		case e.Slot < m.Slot || e.Slot >= m.Next:
			return fmt.Errorf("%w: %s entry at slot %d outside page [%d, %d)", ErrMalformed, m.Type, e.Slot, m.Slot, m.Next)
		case i > 0 && e.Slot <= m.Scrub[i-1].Slot:
			return fmt.Errorf("%w: %s entry at slot %d after slot %d (not ascending)", ErrMalformed, m.Type, e.Slot, m.Scrub[i-1].Slot)
		case e.Ballot.IsZero():
			return fmt.Errorf("%w: %s entry at slot %d without a ballot", ErrMalformed, m.Type, e.Slot)
		case e.Damaged && e.Hash != 0:
			return fmt.Errorf("%w: %s damaged entry at slot %d with hash %#x", ErrMalformed, m.Type, e.Slot, e.Hash)
		}
	}
	return nil
}

// validateBoot checks the numbers a store hands NewNode against the same
// bounds: a promise, a chosen index or a record beyond them is damage (or
// a forged store), never a state to run from.
func validateBoot(st Storage) error {
	hs := st.InitialState()
	switch {
	case !hs.Promised.InRange():
		return fmt.Errorf("%w: promise %s above round %d", ErrStorage, hs.Promised, uint64(BallotRoundMax))
	// The floor may sit one past SlotMax (every slot up to it decided and
	// cut); no record or chosen slot may.
	case hs.ChosenIndex > SlotMax || st.LastSlot() > SlotMax || st.FirstSlot() > SlotMax+1:
		return fmt.Errorf("%w: slot numbers above %d (chosen %d, first %d, last %d)",
			ErrStorage, uint64(SlotMax), hs.ChosenIndex, st.FirstSlot(), st.LastSlot())
	}
	for _, f := range st.FaultyEntries() {
		if !f.Ballot.InRange() {
			return fmt.Errorf("%w: faulty record at slot %d with ballot %s", ErrStorage, f.Slot, f.Ballot)
		}
	}
	return nil
}
