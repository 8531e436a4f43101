package paxos

// These tests check Message.Validate on the scrubber's two messages
// (scrub.go): a well-formed Scrub and ScrubReply pass, the bounds
// themselves pass (a full page of ScrubPageSlotsMax slots with one entry
// per slot), and each malformed page shape is refused with ErrMalformed —
// a page that ends at or below its start, a page too long, an entry
// outside the page, an entry without a ballot, entries out of order, a
// damaged entry with a hash, too many entries. Each case changes one field
// of a valid message, so a refusal names exactly that fault.

import (
	"errors"
	"testing"
)

var scrubBallot = Ballot{Round: 4, Node: 2}

// validScrub is a leader's request for the page [10, 20).
func validScrub() Message {
	return Message{Type: MsgScrub, From: 2, To: 3, Ballot: scrubBallot, Slot: 10, Next: 20}
}

// validScrubReply answers validScrub: three records, one of them damaged.
func validScrubReply() Message {
	return Message{Type: MsgScrubReply, From: 3, To: 2, Ballot: scrubBallot, Slot: 10, Next: 20, Scrub: []ScrubEntry{
		{Slot: 10, Ballot: Ballot{Round: 3, Node: 1}, Hash: 0xdeadbeef},
		{Slot: 12, Ballot: Ballot{Round: 3, Node: 1}, Damaged: true},
		{Slot: 19, Ballot: scrubBallot, Hash: 7},
	}}
}

// fullScrubReply is a reply for the longest legal page, one entry a slot.
func fullScrubReply() Message {
	m := Message{Type: MsgScrubReply, From: 3, To: 2, Ballot: scrubBallot, Slot: 1, Next: 1 + ScrubPageSlotsMax}
	for s := m.Slot; s < m.Next; s++ {
		m.Scrub = append(m.Scrub, ScrubEntry{Slot: s, Ballot: scrubBallot, Hash: uint32(s)})
	}
	return m
}

func TestValidateScrubWellFormed(t *testing.T) {
	// Arrange.
	ok := map[string]Message{
		"scrub":                  validScrub(),
		"scrub reply":            validScrubReply(),
		"empty reply":            func() Message { m := validScrubReply(); m.Scrub = nil; return m }(),
		"one-slot page":          func() Message { m := validScrub(); m.Next = m.Slot + 1; return m }(),
		"longest page":           func() Message { m := validScrub(); m.Next = m.Slot + ScrubPageSlotsMax; return m }(),
		"full reply":             fullScrubReply(),
		"page ending at SlotMax": func() Message { m := validScrub(); m.Slot, m.Next = SlotMax-5, SlotMax; return m }(),
		"undamaged zero hash":    func() Message { m := validScrubReply(); m.Scrub[0].Hash = 0; return m }(),
	}

	for name, m := range ok {
		// Act.
		err := m.Validate()

		// Check.
		if err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
}

func TestValidateScrubMalformed(t *testing.T) {
	// Arrange: each case breaks one rule of a valid message.
	bad := map[string]Message{
		"scrub without a ballot":     func() Message { m := validScrub(); m.Ballot = Ballot{}; return m }(),
		"reply without a ballot":     func() Message { m := validScrubReply(); m.Ballot = Ballot{}; return m }(),
		"page starts at slot 0":      func() Message { m := validScrub(); m.Slot = 0; return m }(),
		"page end equals start":      func() Message { m := validScrub(); m.Next = m.Slot; return m }(),
		"page end below start":       func() Message { m := validScrub(); m.Next = m.Slot - 1; return m }(),
		"reply page end below start": func() Message { m := validScrubReply(); m.Next = 5; return m }(),
		"page too long":              func() Message { m := validScrub(); m.Next = m.Slot + ScrubPageSlotsMax + 1; return m }(),
		"reply page too long":        func() Message { m := validScrubReply(); m.Next = m.Slot + ScrubPageSlotsMax + 1; return m }(),
		"page end above SlotMax":     func() Message { m := validScrub(); m.Slot, m.Next = SlotMax-1, SlotMax+1; return m }(),
		"entry below the page":       func() Message { m := validScrubReply(); m.Scrub[0].Slot = 9; return m }(),
		"entry at the page end":      func() Message { m := validScrubReply(); m.Scrub[2].Slot = 20; return m }(),
		"entry far past the page":    func() Message { m := validScrubReply(); m.Scrub[2].Slot = SlotMax; return m }(),
		"entry slot above SlotMax":   func() Message { m := validScrubReply(); m.Scrub[2].Slot = SlotMax + 1; return m }(),
		"entry with a zero ballot":   func() Message { m := validScrubReply(); m.Scrub[1].Ballot = Ballot{}; return m }(),
		"entry ballot out of range":  func() Message { m := validScrubReply(); m.Scrub[1].Ballot.Round = BallotRoundMax + 1; return m }(),
		"entries unsorted":           func() Message { m := validScrubReply(); m.Scrub[0], m.Scrub[2] = m.Scrub[2], m.Scrub[0]; return m }(),
		"entries repeat a slot":      func() Message { m := validScrubReply(); m.Scrub[1].Slot = m.Scrub[0].Slot; return m }(),
		"damaged entry with a hash":  func() Message { m := validScrubReply(); m.Scrub[1].Hash = 1; return m }(),
		"too many entries":           func() Message { m := fullScrubReply(); m.Scrub = append(m.Scrub, m.Scrub[0]); return m }(),
		"stray entry out of range": func() Message {
			m := validScrub()
			m.Scrub = []ScrubEntry{{Slot: SlotMax + 1, Ballot: scrubBallot}}
			return m
		}(),
		"stray entry on a heartbeat": {Type: MsgHeartbeat, From: 2, To: 3, Ballot: scrubBallot, Scrub: []ScrubEntry{{Slot: 1, Ballot: Ballot{Round: BallotRoundMax + 1}}}},
		"scrub ballot out of range":  func() Message { m := validScrub(); m.Ballot.Round = BallotRoundMax + 1; return m }(),
	}

	for name, m := range bad {
		// Act.
		err := m.Validate()

		// Check.
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}
