package admin

import (
	pb "github.com/parosdb/paros/api/parospb/paros/v1"
)

// CreateOption shapes a journal at its creation (CreateJournal).
type CreateOption func(*createOptions)

// createOptions is the request a CreateOption shapes.
type createOptions struct {
	req *pb.CreateJournalRequest
}

// WithMembers places the journal on n acceptors (default 3, or every up
// machine when fewer are up).
func WithMembers(n int) CreateOption {
	return func(o *createOptions) { o.req.Members = uint32(max(n, 0)) }
}

// WithMemberIDs places the journal on exactly these machines.
func WithMemberIDs(ids ...NodeID) CreateOption {
	return func(o *createOptions) { o.req.MemberIds = wireIDs(ids) }
}

// WithQuorum sets the journal's quorum system (default Majority).
func WithQuorum(q Quorum) CreateOption {
	return func(o *createOptions) {
		o.req.QuorumSystem, o.req.Phase1Quorum, o.req.Phase2Quorum, o.req.Rows, o.req.Cols = q.wire()
	}
}

// WithMultiWriter makes the journal multi-writer (client.Appender) rather
// than single-writer (client.Writer, the default).
func WithMultiWriter() CreateOption {
	return func(o *createOptions) { o.req.WriterMode = pb.WriterMode_WRITER_MODE_MULTI }
}
