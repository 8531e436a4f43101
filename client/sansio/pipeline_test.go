// This file holds the helpers of the Pipeline's tests, which check the
// Pipeline, the sans-IO scheduler in front of a single-writer Writer,
// against the table in its doc comment: one unit test per row
// (pipeline_verdicts_test.go), then BeginClaim, Close, WriteAttemptsMax and
// the options (pipeline_claim_test.go), the window, coalescing, the
// one-request-leaving rule and the Stats counters
// (pipeline_batching_test.go), and a property test against the fake journal
// (pipeline_sim_test.go). Each unit test plays the driver by hand: it
// appends, takes attempts from Next, applies them to the fake journal (the
// real state machine) and absorbs the replies, losing one on purpose by
// absorbing the zero Reply; timers fire when the test calls Wake, so nothing
// sleeps.
package sansio

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// claimedPipeline returns a pipeline whose writer won a claim on f with
// uuid u; a later claim draws uC.
func claimedPipeline(t *testing.T, f *fakeJournal, u journal.LeaderUUID, o PipelineOptions) *Pipeline {
	t.Helper()
	p := NewPipeline(NewWriter(testID, fixedUUIDs(u, uC)), o)
	req := p.BeginClaim()
	if res := p.AbsorbClaim(req, f.setLeader(req)); res.Kind != ResultWon {
		t.Fatalf("claim: %s", res.Kind)
	}
	return p
}

// pappend appends records, which must be accepted.
func pappend(t *testing.T, p *Pipeline, rs ...string) (AppendID, journal.Seq) {
	t.Helper()
	id, seq, err := p.Append(recs(rs...))
	if err != nil {
		t.Fatalf("Append(%q): %v", rs, err)
	}
	return id, seq
}

// send takes the next attempt, which must be there, and lets it leave.
func send(t *testing.T, p *Pipeline) Send {
	t.Helper()
	s, ok := p.Next()
	if !ok {
		t.Fatalf("Next: nothing to send")
	}
	p.Left(s.ID)
	return s
}

// noSend fails if Next hands out an attempt.
func noSend(t *testing.T, p *Pipeline, why string) {
	t.Helper()
	if s, ok := p.Next(); ok {
		t.Fatalf("%s: Next handed out write %d, attempt %d", why, s.ID, s.Attempt)
	}
}

// settled drains the completions by append id; a repeated one fails.
func settled(t *testing.T, p *Pipeline) map[AppendID]Completion {
	t.Helper()
	out := map[AppendID]Completion{}
	for _, c := range p.Completions() {
		if _, dup := out[c.ID]; dup {
			t.Fatalf("append %d completed twice", c.ID)
		}
		out[c.ID] = c
	}
	return out
}

// settledAfter runs act and returns the completions it caused.
func settledAfter(t *testing.T, p *Pipeline, act func()) map[AppendID]Completion {
	t.Helper()
	if cs := p.Completions(); len(cs) != 0 {
		t.Fatalf("completions before the act: %+v", cs)
	}
	act()
	return settled(t, p)
}

// sameRequest reports whether a and b are the identical write: the same
// journal, uuid, position and bytes.
func sameRequest(a, b journal.WriteRequest) bool {
	return a.Journal == b.Journal &&
		journal.Entry{Leader: a.Leader, Seq: a.Seq, Records: a.Records}.Equal(journal.Entry{Leader: b.Leader, Seq: b.Seq, Records: b.Records})
}

// logOf returns the fake journal's log as strings.
func logOf(f *fakeJournal) []string {
	out := make([]string, len(f.log))
	for i, r := range f.log {
		out[i] = string(r)
	}
	return out
}

// recordsOf returns a write's records as strings.
func recordsOf(req journal.WriteRequest) []string {
	out := make([]string, len(req.Records))
	for i, r := range req.Records {
		out[i] = string(r)
	}
	return out
}
