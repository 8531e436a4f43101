package host

import (
	"cmp"
	"slices"
)

// The machine's campaign budget. A journal whose election timer expires
// campaigns: matchmaking, Phase 1, its noop. When a machine that led
// thousands of quiet journals dies, every one of them is woken within one
// election timeout, and each survivor had thousands of campaigns due in
// the same second. Measured with 10,000 journals, that many campaigns at
// once filled the links between the survivors until messages were dropped,
// no campaign finished within its timeout, every one started again higher,
// and no journal was led two minutes later. So a process lets at most
// CampaignsMax of its nodes campaign at once: a node whose campaign is due
// past that waits, due, for a later tick (paxos.Node.HoldCampaign), and
// the longest waiting go first.
//
// Liveness: a campaign holds its slot until it ends (won, or due again: its
// retry competes like any other) and three base election timeouts at most,
// so a due journal waits at most about ceil(due journals / CampaignsMax)
// times three election timeouts for a slot. Safety
// is untouched: the budget only delays campaigns, and Paxos is safe
// whoever campaigns when.

// tickJournal ticks one live journal's node and hands out what it did.
func (h *Host) tickJournal(j *journalRT) {
	j.tickedAt = h.now
	j.node.Tick()
	h.expireCalls(j)
	h.drain(j)
}

// tickDue ticks the journals whose campaign is due this tick, letting at
// most CampaignsMax - campaigning of them campaign: those that waited
// longest first, then in id order. The others are held and wait.
func (h *Host) tickDue(due []*journalRT, campaigning int) {
	slots := max(0, h.tun.CampaignsMax-campaigning)
	if len(due) > slots {
		slices.SortStableFunc(due, func(a, b *journalRT) int { return cmp.Compare(a.dueSince, b.dueSince) })
	}
	for i, j := range due {
		if j.status != Live {
			continue // a drain of an earlier one quarantined or retired it
		}
		hold := i >= slots
		if hold && j.dueSince == 0 {
			j.dueSince = h.now
		}
		if !hold {
			// The slot is the campaign's until it ends or for three base
			// election timeouts at most (longer than any member's ranked
			// timeout): a round change that neither wins nor times out
			// (its timer reset by messages from a stale ballot's leader)
			// must not hold a slot for good, or a budget of one starves
			// every other journal (sweep seed 539).
			j.dueSince = 0
			j.slotUntil = h.now + uint64(3*h.tun.ElectionTicks)
		}
		j.node.HoldCampaign(hold)
		h.tickJournal(j)
		if j.status == Live {
			j.node.HoldCampaign(false)
		}
		if hold {
			h.counters.CampaignsHeld++
		}
	}
}
