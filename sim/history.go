package sim

import (
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/sim/lincheck"
)

// record adds a finished call to its journal's history for lincheck.
func (cs *clients) record(f *inflight, r host.Response, timedOut bool) {
	w := cs.w
	jid := f.call.Journal()
	o := lincheck.Op{Client: f.c.idx, Call: f.sentAt, Return: w.sched.now}
	switch f.call.Kind {
	case host.CallRead:
		rr := r.Read
		o.In = lincheck.Input{Kind: lincheck.OpRead, From: f.call.Read.FromSeq}
		o.Out = lincheck.Output{Served: rr.Served && !timedOut, BelowFloor: rr.BelowFloor, View: rr.View}
		for _, rec := range rr.Records {
			o.Out.Records = append(o.Out.Records, lincheck.RecordPrint(rec))
		}
	default:
		var cmd journal.Command
		kind := lincheck.OpWrite
		switch f.call.Kind {
		case host.CallWrite:
			wr := f.call.Write
			cmd = journal.Write(journal.Entry{Leader: wr.Leader, Seq: wr.Seq, Records: wr.Records})
		case host.CallTruncate:
			kind = lincheck.OpTruncate
			cmd = journal.Truncate(f.call.Truncate.Leader, f.call.Truncate.UpTo)
		case host.CallSetLeader:
			kind = lincheck.OpSetLeader
			cmd = journal.SetLeader(f.call.SetLeader.New, f.call.SetLeader.Old)
		}
		o.In = lincheck.Input{Kind: kind, Cmd: cmd}
		rep := r.Reply
		switch {
		case timedOut || rep.Ambiguous():
			o.Out = lincheck.Output{Ambiguous: true}
		case rep.Outcome.Kind == journal.OutcomeInvalid:
			o.Out = lincheck.Output{NoEffect: true}
		default:
			o.Out = lincheck.Output{Outcome: rep.Outcome}
		}
	}
	cs.hist[jid] = append(cs.hist[jid], o)
}
