package election

import (
	"errors"
	"fmt"
	"strings"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/wire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Magic starts every election record (frozen). A record without it is
// not the election's: folds ignore it.
const Magic = "\x00PRSELC\x01"

// Term numbers the terms of an election: 0 before the first, then 1, 2, …
type Term uint64

// Errors of Decode.
var (
	// ErrNotElection: the record does not start with Magic.
	ErrNotElection = errors.New("paros/election: not an election record")
	// ErrMalformed: the record starts with Magic but its body is not a
	// well-formed ElectionRecord.
	ErrMalformed = errors.New("paros/election: malformed election record")
)

var deterministic = proto.MarshalOptions{Deterministic: true}

// CampaignRecord is the record a candidate appends to stand for term.
func CampaignRecord(term Term, candidate journal.LeaderUUID, iface string) []byte {
	return Encode(&pb.ElectionRecord{Term: uint64(term), Candidate: wire.UUIDToPB(candidate),
		Kind: &pb.ElectionRecord_Campaign{Campaign: &pb.Leadership{Interface: iface}}})
}

// RenewRecord is the record the leader of term appends to show it is alive.
func RenewRecord(term Term, leader journal.LeaderUUID, iface string) []byte {
	return Encode(&pb.ElectionRecord{Term: uint64(term), Candidate: wire.UUIDToPB(leader),
		Kind: &pb.ElectionRecord_Renew{Renew: &pb.Leadership{Interface: iface}}})
}

// ResignRecord is the record the leader of term appends to end it; successor
// (unset: none) is whom it hands on to.
func ResignRecord(term Term, leader, successor journal.LeaderUUID) []byte {
	return Encode(&pb.ElectionRecord{Term: uint64(term), Candidate: wire.UUIDToPB(leader),
		Kind: &pb.ElectionRecord_Resign{Resign: &pb.Resign{Successor: wire.UUIDToPB(successor)}}})
}

// Encode is Magic followed by r's deterministic encoding. It does not check
// r: Decode does.
func Encode(r *pb.ElectionRecord) []byte {
	b, err := deterministic.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("paros/election: marshal: %v", err))
	}
	return append([]byte(Magic), b...)
}

// Decode reads an election record. Errors: ErrNotElection when rec does not
// start with Magic; ErrMalformed when the body does not unmarshal, carries
// a field this version does not know (a watcher that skipped it could fold
// differently from one that did not), sets no kind, or names term 0 or no
// candidate.
func Decode(rec []byte) (*pb.ElectionRecord, error) {
	if !strings.HasPrefix(string(rec), Magic) {
		return nil, ErrNotElection
	}
	r := &pb.ElectionRecord{}
	if err := proto.Unmarshal(rec[len(Magic):], r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if hasUnknown(r.ProtoReflect()) {
		return nil, fmt.Errorf("%w: unknown fields", ErrMalformed)
	}
	switch k := r.GetKind().(type) {
	case *pb.ElectionRecord_Campaign:
		if k.Campaign == nil {
			return nil, fmt.Errorf("%w: no kind", ErrMalformed)
		}
	case *pb.ElectionRecord_Renew:
		if k.Renew == nil {
			return nil, fmt.Errorf("%w: no kind", ErrMalformed)
		}
	case *pb.ElectionRecord_Resign:
		if k.Resign == nil {
			return nil, fmt.Errorf("%w: no kind", ErrMalformed)
		}
	default:
		return nil, fmt.Errorf("%w: no kind", ErrMalformed)
	}
	if r.GetTerm() == 0 {
		return nil, fmt.Errorf("%w: term 0", ErrMalformed)
	}
	if !wire.UUIDFromPB(r.GetCandidate()).IsSet() {
		return nil, fmt.Errorf("%w: no candidate", ErrMalformed)
	}
	return r, nil
}

// hasUnknown reports whether m or any message below it holds unknown
// fields (ElectionRecord has no lists or maps).
func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
			found = hasUnknown(v.Message())
		}
		return !found
	})
	return found
}
