package main

import (
	"fmt"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// The writer fence a write carries, and the rule that keeps parosctl from
// displacing an application's writer:
//
//   - --fence U: U, as given (the write is refused if U is not in force);
//   - --take-over: a fresh fence, claimed from whoever holds it;
//   - the journal's fence is unset (never claimed): a fresh fence, claimed;
//   - the fence in force is one this user's parosctl claimed (the fence
//     book): that fence;
//   - else refused (exit 3): someone else holds it, parosctl cannot tell
//     who, and kicking them out is the caller's decision.
//
// A multi-writer journal has no fence: its claim is wrong_mode, and its
// writes go through a client.Appender, unfenced.

// fenceChoice is the fence a write carries, and where it came from.
type fenceChoice struct {
	fence   journal.LeaderUUID // unset on a multi-writer journal
	next    journal.Seq        // where the first batch goes
	claimed bool               // this run claimed fence
	multi   bool               // a multi-writer journal: no fence
}

// writerFence applies the rule above to the journal j: flag is --fence
// (unset: none given), seq is --seq (0: the tail).
func (g *globals) writerFence(c *client.Client, j *client.Journal, flag journal.LeaderUUID, takeOver bool, seq journal.Seq) (fenceChoice, error) {
	if flag.IsSet() && seq != 0 {
		return fenceChoice{fence: flag, next: seq}, nil
	}
	view, err := g.currentView(j)
	if err != nil {
		return fenceChoice{}, err
	}
	at := func(v journal.View) journal.Seq {
		if seq != 0 {
			return seq
		}
		return v.NextSeq
	}
	switch {
	case flag.IsSet():
		return fenceChoice{fence: flag, next: at(view)}, nil
	case takeOver || !view.Leader.IsSet():
		u, v, multi, err := g.claim(c, j, client.RandomUUIDs(), view.Leader)
		if err != nil || multi {
			return fenceChoice{multi: multi}, err
		}
		return fenceChoice{fence: u, next: at(v), claimed: true}, nil
	}
	if cell, err := g.cellID(c); err == nil {
		if u, ok := knownFence(cell, j.ID()); ok && u == view.Leader {
			return fenceChoice{fence: u, next: at(view)}, nil
		}
	}
	return fenceChoice{}, fail(exitRefused,
		"journal %s: its writer fence %s is held by someone else (not claimed by this user's parosctl; who holds it is unknown): "+
			"pass --take-over to claim a fresh fence (the holder's next write is then refused), or --fence %s to write with it",
		j.ID(), formatUUID(view.Leader), formatUUID(view.Leader))
}

// claim moves the journal's writer fence from old to u by one SetLeader,
// remembers u in the fence book, and returns the view the claim left (no
// other writer can move its NextSeq). multi reports a multi-writer
// journal, which has no fence to claim (nothing changed).
func (g *globals) claim(c *client.Client, j *client.Journal, u, old journal.LeaderUUID) (journal.LeaderUUID, journal.View, bool, error) {
	r, err := g.setFence(c, j, u, old)
	if err != nil {
		return u, journal.View{}, false, err
	}
	if r.Outcome.Kind == journal.WrongMode {
		return u, journal.View{}, true, nil
	}
	line, code := verdictLine(r)
	if r.Outcome.Kind != journal.LeaderSet {
		return u, journal.View{}, false, exitError{max(code, exitRefused), fmt.Errorf("claim: %s", line)}
	}
	return u, r.Outcome.View, false, nil
}

// setFence sends one SetLeader(u, old) and, when it wins, records u in
// the fence book (a book that cannot be written is reported, not fatal).
// It returns the reply, or the error of a call that got no verdict.
func (g *globals) setFence(c *client.Client, j *client.Journal, u, old journal.LeaderUUID) (journal.Reply, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	r, err := j.SetLeader(ctx, journal.SetLeaderRequest{Journal: j.ID(), New: u, Old: old})
	if _, _, err := settle(j.ID(), r, err); err != nil {
		return r, err
	}
	if r.Outcome.Kind == journal.LeaderSet {
		cell, err := g.cellID(c)
		if err == nil {
			err = rememberFence(cell, j.ID(), u)
		}
		if err != nil {
			g.warn("could not remember fence %s in the fence book: %v (pass --fence %s to write with it)", formatUUID(u), err, formatUUID(u))
		}
	}
	return r, nil
}

// cellID is the id of the cell the Client reaches: the first server that
// answers Inspect with one.
func (g *globals) cellID(c *client.Client) (uint64, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	var last error
	for _, st := range admin.New(c).Inspect(ctx, journal.ID{}) {
		if st.Err == nil && st.CellID != 0 {
			return st.CellID, nil
		}
		last = st.Err
	}
	if last == nil {
		last = fmt.Errorf("no server is in a cell yet")
	}
	return 0, callError(last)
}

// currentView reads the journal's view: a served read past any tail
// (journal.SeqMax) returns no records and the view as of a linearizable
// moment.
func (g *globals) currentView(j *client.Journal) (journal.View, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	rep, err := j.Read(ctx, journal.ReadRequest{FromSeq: journal.SeqMax, Limit: 1})
	switch {
	case err != nil:
		return journal.View{}, callError(err)
	case rep.UnknownJournal:
		return journal.View{}, callError(fmt.Errorf("%w: %s", client.ErrUnknownJournal, j.ID()))
	case !rep.Served:
		return journal.View{}, callError(fmt.Errorf("%w: %s", client.ErrUnavailable, j.ID()))
	}
	return rep.View, nil
}
