package client

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
)

// The journal's own types, named here so the common path needs one
// import: a position, an id, and the fence a Writer holds.
type (
	// Seq is a position in a journal: the first record is at FirstSeq.
	Seq = journal.Seq
	// JournalID names a journal (ParseRef reads one; Client.Resolve
	// finds the id of a name).
	JournalID = journal.ID
	// Fence is the writer fence: the uuid a Writer installs with
	// SetLeader, which every write of a single-writer journal must carry.
	Fence = journal.LeaderUUID
)

// FirstSeq is the position of a journal's first record.
const FirstSeq = journal.FirstSeq

// Resolution is what Journal.Resolve found of a write whose answer was
// lost: Kind is ResolvedWritten, ResolvedNotWritten, ResolvedBelowFloor or
// Unresolved.
type (
	Resolution     = sansio.Resolution
	ResolutionKind = sansio.ResolutionKind
)

// The kinds of a Resolution.
const (
	ResolvedWritten    = sansio.ResolvedWritten
	ResolvedNotWritten = sansio.ResolvedNotWritten
	ResolvedBelowFloor = sansio.ResolvedBelowFloor
	Unresolved         = sansio.Unresolved
)

// Journal is a network handle on one journal: the four data-plane calls,
// each sent to the servers of a Client until one gives an answer worth
// returning. It decides nothing about the journal: NewWriter, NewAppender
// and NewReader wrap the sans-IO types of client/sansio around it.
//
// How each call travels:
//
//	answer                                   what the handle does
//	---------------------------------------  ----------------------------------------------
//	a verdict (any Outcome)                  returns it; remembers the server as the leader
//	NotLeader                                asks the hinted node next (its address learned
//	                                         by Admin.Inspect{node_only}), then the others
//	Busy                                     asks the other servers, then backs off
//	UnknownJournal                           asks the others; gives up at once only when
//	                                         every server is in a cell that lacks the journal
//	Lost, Unavailable, TooLarge              returns it as it is (Lost and Unavailable are
//	                                         ambiguous: Reply.Ambiguous is true)
//	no connection (refused, unreachable)     asks the next server: nothing was sent
//	transport error after the request        returns Reply{NoVerdict: journal.Lost}: the
//	may have been received, or the context   request may have been received and may still
//	ended while it was out                   take effect — ambiguous, never "not done"
//
// Rounds over every server are separated by a backoff (10 ms doubling to
// 500 ms) and bounded by the caller's context and by about 30 s in all.
// The handle never resends a request that may have been received: a
// caller that holds an ambiguous reply resends the identical request
// itself (a Writer does so), which is safe for fenced writes,
// SetLeader and Truncate, and may append an unfenced write twice.
//
// A Journal is safe for concurrent use.
type Journal struct {
	c  *Client
	id journal.ID
}

// ID names the journal.
func (j *Journal) ID() journal.ID { return j.id }

// Write sends a Write. The reply is the journal's verdict, or a reply
// without one: NotLeader, Busy or UnknownJournal when every server kept
// answering so (nothing was proposed), TooLarge (nothing was proposed), or
// an ambiguous Lost or Unavailable (Reply.Ambiguous: the write may still
// land; resend the identical request — a fenced write at the same position
// is answered Duplicate if it landed). The error is non-nil only when no
// server answered at all and nothing was received: the context's error,
// or ErrNoServer; or when a server refused the credentials (ErrDenied,
// nothing was proposed).
//
// Write, Truncate and SetLeader never go to a replica machine (it could
// only redirect): when every server of the Client is one, they end at once
// with an ErrNoServer.
//
// req.Journal must be the handle's journal or unset (it is filled in).
func (j *Journal) Write(ctx context.Context, req journal.WriteRequest) (journal.Reply, error) {
	req.Journal = j.check(req.Journal)
	in := &pb.WriteRequest{Journal: wire.JournalIDToPB(req.Journal), Leader: wire.UUIDToPB(req.Leader),
		Seq: uint64(req.Seq), Records: req.Records}
	return j.mutate(ctx, func(ctx context.Context, s *server, opts ...grpc.CallOption) (*pb.Verdict, error) {
		r, err := s.journal.Write(ctx, in, opts...)
		return r.GetVerdict(), err
	})
}

// Truncate sends a Truncate. Replies and errors as for Write; an
// ambiguous truncation is always safe to resend, since it only raises the
// floor.
func (j *Journal) Truncate(ctx context.Context, req journal.TruncateRequest) (journal.Reply, error) {
	req.Journal = j.check(req.Journal)
	in := &pb.TruncateRequest{Journal: wire.JournalIDToPB(req.Journal), Leader: wire.UUIDToPB(req.Leader), UpTo: uint64(req.UpTo)}
	return j.mutate(ctx, func(ctx context.Context, s *server, opts ...grpc.CallOption) (*pb.Verdict, error) {
		r, err := s.journal.Truncate(ctx, in, opts...)
		return r.GetVerdict(), err
	})
}

// SetLeader sends a SetLeader. Replies and errors as for Write. After an
// ambiguous reply resend the identical request, never a fresh uuid: a
// LeaderRefused naming the request's own New means an earlier attempt won
// (Writer.AbsorbClaim reads it so).
func (j *Journal) SetLeader(ctx context.Context, req journal.SetLeaderRequest) (journal.Reply, error) {
	req.Journal = j.check(req.Journal)
	in := &pb.SetLeaderRequest{Journal: wire.JournalIDToPB(req.Journal), NewLeader: wire.UUIDToPB(req.New), OldLeader: wire.UUIDToPB(req.Old)}
	return j.mutate(ctx, func(ctx context.Context, s *server, opts ...grpc.CallOption) (*pb.Verdict, error) {
		r, err := s.journal.SetLeader(ctx, in, opts...)
		return r.GetVerdict(), err
	})
}

// Read sends a Read, to the server that last served this journal first;
// when the Client knows replica machines among its servers, to them first
// (WithReplicaReads: the replica that last served, the other replicas, then
// the nodes). An unserved page, an UnknownJournal answer or a transport
// error is asked of the next server; a read has no effect, so nothing about
// it is ambiguous. The reply is the first served page (records, an empty page
// after the long-poll, or BelowFloor), else the last unserved or
// UnknownJournal answer once the rounds run out. The error is non-nil only
// when no server answered at all: the context's error, or ErrNoServer; or
// when a server refused the credentials (ErrDenied).
//
// req.Journal must be the handle's journal or unset (it is filled in).
func (j *Journal) Read(ctx context.Context, req journal.ReadRequest) (journal.ReadReply, error) {
	req.Journal = j.check(req.Journal)
	in := &pb.ReadRequest{Journal: wire.JournalIDToPB(req.Journal), FromSeq: uint64(req.FromSeq), Limit: req.Limit, WaitMs: req.WaitMs}
	wait := time.Duration(min(req.WaitMs, journal.WaitMsMax)) * time.Millisecond
	var last journal.ReadReply
	var haveLast bool
	var lastErr error
	d := backoffMin
	for range roundsMax {
		onlyUnknown := true
		for _, i := range j.c.readOrder(j.id) {
			if ctx.Err() != nil {
				break
			}
			actx, cancel := attemptCtx(ctx, wait)
			r, err := j.c.list()[i].journal.Read(actx, in)
			cancel()
			if denied(err) {
				return journal.ReadReply{}, deniedError(j.c.list()[i].addr, err)
			}
			if err != nil {
				lastErr = err
				continue
			}
			rr := wire.ReadReplyFromPB(r)
			if rr.Deleted {
				return rr, nil // final: no server will serve it
			}
			if rr.Served && !rr.UnknownJournal {
				j.c.setReader(j.id, i)
				return rr, nil
			}
			last, haveLast = rr, true
			onlyUnknown = onlyUnknown && rr.UnknownJournal
		}
		if j.roundOver(ctx, haveLast && onlyUnknown && last.UnknownJournal, false, &d) {
			break
		}
	}
	if haveLast {
		return last, nil
	}
	return journal.ReadReply{}, j.noAnswer(ctx, lastErr)
}

// roundOver ends a round over every server that gave no answer worth
// returning, and reports whether the call stops with what it has: when
// ctx ended, when every server answered UnknownJournal (unknownEverywhere)
// and none may come to serve the journal, or when ctx ends during the
// pause before the next round (*d, doubled up to backoffMax, or up to
// electingPauseMax after a leaderless round).
func (j *Journal) roundOver(ctx context.Context, unknownEverywhere, leaderless bool, d *time.Duration) bool {
	if ctx.Err() != nil || (unknownEverywhere && !j.c.mayServe(ctx, j.id)) {
		return true
	}
	next, err := pause(ctx, *d)
	if leaderless {
		next = min(next, electingPauseMax)
	}
	*d = next
	return err != nil
}

// electingPauseMax caps the pause after a leaderless round: one in which
// some server answered that it does not lead and none named a leader. An
// election is under way and names its winner within a few of the servers'
// ticks, so backing off further only delays the call: a new journal's
// first claim waited 0.6 s of backoff for a leader elected in a tenth of
// that. Twenty rounds a second per waiting call is little load.
const electingPauseMax = 50 * time.Millisecond

// check fills an unset journal id and refuses another journal's request
// (a programmer error).
func (j *Journal) check(id journal.ID) journal.ID {
	if id == (journal.ID{}) {
		return j.id
	}
	if id != j.id {
		panic(fmt.Sprintf("client: a request for journal %s sent through the handle of %s", id, j.id))
	}
	return id
}

func (j *Journal) noAnswer(ctx context.Context, lastErr error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w (last error: %v)", ErrNoServer, lastErr)
}

// invoker sends one mutating call to one server.
type invoker func(ctx context.Context, s *server, opts ...grpc.CallOption) (*pb.Verdict, error)

// mutate runs the rounds of Write, Truncate and SetLeader (see Journal).
func (j *Journal) mutate(ctx context.Context, invoke invoker) (journal.Reply, error) {
	var last journal.Reply
	var haveLast bool
	var lastErr error
	d := backoffMin
	for range roundsMax {
		tried := map[int]bool{} // the list may grow mid-round (a learned machine)
		queue := j.c.writeOrder(j.id)
		if len(queue) == 0 {
			return journal.Reply{}, errOnlyReplicas
		}
		onlyUnknown := true
		noLeader, hinted := false, false // a NotLeader without a hint; one with
		for len(queue) > 0 && ctx.Err() == nil {
			i := queue[0]
			queue = queue[1:]
			if tried[i] {
				continue
			}
			tried[i] = true
			var p peer.Peer
			actx, cancel := attemptCtx(ctx, 0)
			v, err := invoke(actx, j.c.list()[i], grpc.Peer(&p))
			cancel()
			if err != nil {
				if status.Code(err) == codes.InvalidArgument {
					// The server refused the request before consensus
					// (a write over its limits): nothing was proposed.
					return journal.Reply{NoVerdict: journal.TooLarge}, nil
				}
				if denied(err) {
					// The server refused the credentials before
					// consensus: nothing was proposed, and no other
					// server takes them either.
					return journal.Reply{}, deniedError(j.c.list()[i].addr, err)
				}
				if sent(&p) {
					return journal.Reply{NoVerdict: journal.Lost}, nil
				}
				lastErr = err
				continue
			}
			r := wire.VerdictFromPB(v)
			if r.Outcome.Kind != journal.OutcomeInvalid {
				j.c.setLeader(j.id, i)
				return r, nil
			}
			switch r.NoVerdict {
			case journal.NotLeader:
				last, haveLast, onlyUnknown = r, true, false
				noLeader, hinted = noLeader || r.LeaderHint == 0, hinted || r.LeaderHint != 0
				if h := j.c.indexOfNode(ctx, r.LeaderHint); h >= 0 && !tried[h] && !j.c.isReplica(h) {
					j.c.setLeader(j.id, h)
					queue = append([]int{h}, queue...)
				}
				continue
			case journal.Busy:
				last, haveLast, onlyUnknown = r, true, false
				continue
			case journal.UnknownJournal:
				last, haveLast = r, true
				continue
			}
			return r, nil // Lost, Unavailable (ambiguous) or TooLarge
		}
		if j.roundOver(ctx, haveLast && onlyUnknown && last.NoVerdict == journal.UnknownJournal, noLeader && !hinted, &d) {
			break
		}
	}
	if haveLast {
		return last, nil
	}
	return journal.Reply{}, j.noAnswer(ctx, lastErr)
}

// Resolve reads the position of the fenced write req back and judges the
// page with the function Resolve: whether a write whose answer was lost
// (an abandoned or ambiguous write) is in the log. The error is Read's.
func (j *Journal) Resolve(ctx context.Context, req journal.WriteRequest) (Resolution, error) {
	page, err := j.Read(ctx, journal.ReadRequest{Journal: req.Journal, FromSeq: req.Seq,
		Limit: uint32(min(len(req.Records), journal.ReadRecordsMax))})
	if err != nil {
		return Resolution{}, err
	}
	return sansio.Resolve(req, page), nil
}
