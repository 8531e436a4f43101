// Package registrypb is the protobuf side of core/registry: it decodes the
// control journal's records (pb.RegistryEntry) into registry entries,
// encodes the registry's state as a pb.RegistryState checkpoint, and wraps
// registry.State as a checkpoint.Checkpointable (State).
//
// It lives under wire/, the module's protobuf <-> core conversion layer,
// because it imports api/parospb and google.golang.org/protobuf, which
// nothing under core/ may (internal/archtest).
//
// Decoding is strict: a record that does not unmarshal, that sets no case of
// the entry oneof, or that carries a field this version does not know (a
// machine that skipped it would fold differently from one that did not) is
// malformed. Encoding is deterministic (proto.MarshalOptions{Deterministic:
// true}) over the registry's canonical Snapshot, so equal states encode to
// equal bytes.
package registrypb

import (
	"errors"
	"fmt"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/registry"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ErrMalformed is the class of every refused record or checkpoint.
var ErrMalformed = errors.New("paros/registry: malformed record")

var deterministic = proto.MarshalOptions{Deterministic: true}

// State is registry.State as a checkpoint.Checkpointable: Apply decodes and
// folds one record, Checkpoint and Restore carry a pb.RegistryState. Every
// query of registry.State is promoted.
type State struct {
	*registry.State
}

// New returns the empty registry.
func New() *State { return &State{registry.New()} }

// Apply folds the record at seq. A malformed record returns an error
// wrapping ErrMalformed and changes nothing, At included; any other record
// is folded (a refused request is an outcome, not an error).
func (s *State) Apply(seq journal.Seq, rec []byte) error {
	e, err := Decode(rec)
	if err != nil {
		return err
	}
	s.Fold(seq, EntryFromPB(e))
	return nil
}

// Checkpoint is the state's deterministic encoding: a pb.RegistryState with
// every list in canonical order. It depends on the state alone, not on At.
func (s *State) Checkpoint() []byte { return EncodeState(s.Proto()) }

// Restore replaces the state with the one b encodes, covering every
// position below coversUpTo. A b that does not decode strictly or that
// registry.State.RestoreSnapshot refuses is an error and the state is left
// as it was.
func (s *State) Restore(coversUpTo journal.Seq, b []byte) error {
	st, err := DecodeState(b)
	if err != nil {
		return err
	}
	return s.RestoreSnapshot(coversUpTo, SnapshotFromPB(st))
}

// Clone is a deep copy of s.
func (s *State) Clone() *State { return &State{s.State.Clone()} }

// Proto is the state as the pb.RegistryState a checkpoint carries.
func (s *State) Proto() *pb.RegistryState { return SnapshotToPB(s.Snapshot()) }

// Decode decodes one registry record strictly.
func Decode(rec []byte) (*pb.RegistryEntry, error) {
	e := &pb.RegistryEntry{}
	if err := proto.Unmarshal(rec, e); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !oneofSet(e) {
		return nil, fmt.Errorf("%w: no entry set", ErrMalformed)
	}
	if hasUnknown(e.ProtoReflect()) {
		return nil, fmt.Errorf("%w: unknown fields", ErrMalformed)
	}
	return e, nil
}

// oneofSet reports whether exactly one case of e's oneof is set, with its
// message present.
func oneofSet(e *pb.RegistryEntry) bool {
	switch x := e.GetEntry().(type) {
	case *pb.RegistryEntry_RegisterMachine:
		return x.RegisterMachine != nil
	case *pb.RegistryEntry_DrainMachine:
		return x.DrainMachine != nil
	case *pb.RegistryEntry_CreateTenant:
		return x.CreateTenant != nil
	case *pb.RegistryEntry_DeleteTenant:
		return x.DeleteTenant != nil
	case *pb.RegistryEntry_CreateJournal:
		return x.CreateJournal != nil
	case *pb.RegistryEntry_DeleteJournal:
		return x.DeleteJournal != nil
	case *pb.RegistryEntry_JournalGone:
		return x.JournalGone != nil
	}
	return false
}

// Encode is e's deterministic encoding, the record a coordinator appends.
// It panics if e does not marshal (a string field that is not UTF-8): the
// caller builds e from decoded, hence valid, input.
func Encode(e *pb.RegistryEntry) []byte { return marshal(e) }

// EncodeEntries encodes registry entries as the records of one append.
func EncodeEntries(es []registry.Entry) [][]byte {
	recs := make([][]byte, len(es))
	for i, e := range es {
		recs[i] = Encode(EntryToPB(e))
	}
	return recs
}

// DecodeState decodes a checkpoint strictly.
func DecodeState(b []byte) (*pb.RegistryState, error) {
	st := &pb.RegistryState{}
	if err := proto.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrMalformed, err)
	}
	if hasUnknown(st.ProtoReflect()) {
		return nil, fmt.Errorf("%w: checkpoint: unknown fields", ErrMalformed)
	}
	return st, nil
}

// EncodeState is st's deterministic encoding.
func EncodeState(st *pb.RegistryState) []byte { return marshal(st) }

func marshal(m proto.Message) []byte {
	b, err := deterministic.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("paros/registry: marshal %T: %v", m, err))
	}
	return b
}

// hasUnknown reports whether m or any message below it holds unknown
// fields.
func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i, l := 0, v.List(); i < l.Len() && !found; i++ {
				found = hasUnknown(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				found = hasUnknown(mv.Message())
				return !found
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			found = hasUnknown(v.Message())
		}
		return !found
	})
	return found
}

// EntryFromPB is e as a registry entry (EntryInvalid if no case is set).
func EntryFromPB(e *pb.RegistryEntry) registry.Entry {
	switch x := e.GetEntry().(type) {
	case *pb.RegistryEntry_RegisterMachine:
		m := x.RegisterMachine
		return registry.RegisterMachine(m.GetNodeId(), m.GetAddr(), m.GetFailureDomain())
	case *pb.RegistryEntry_DrainMachine:
		return registry.DrainMachine(x.DrainMachine.GetNodeId())
	case *pb.RegistryEntry_CreateTenant:
		c := x.CreateTenant
		return registry.CreateTenant(c.GetRequest(), c.GetName(), c.GetTenantId())
	case *pb.RegistryEntry_DeleteTenant:
		d := x.DeleteTenant
		return registry.DeleteTenant(d.GetRequest(), d.GetName())
	case *pb.RegistryEntry_CreateJournal:
		c := x.CreateJournal
		return registry.CreateJournal(c.GetRequest(), c.GetTenant(), c.GetName(), c.GetJournalId(),
			PlacementFromPB(c.GetPlacement()))
	case *pb.RegistryEntry_DeleteJournal:
		d := x.DeleteJournal
		return registry.DeleteJournal(d.GetRequest(), d.GetTenant(), d.GetName())
	case *pb.RegistryEntry_JournalGone:
		return registry.JournalGone(idFromPB(x.JournalGone.GetJournal()))
	}
	return registry.Entry{}
}

// EntryToPB is e as a pb.RegistryEntry (an empty one, which Decode refuses,
// for EntryInvalid).
func EntryToPB(e registry.Entry) *pb.RegistryEntry {
	switch e.Kind {
	case registry.EntryRegisterMachine:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_RegisterMachine{RegisterMachine: &pb.RegisterMachine{
			NodeId: e.NodeID, Addr: e.Addr, FailureDomain: e.FailureDomain}}}
	case registry.EntryDrainMachine:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_DrainMachine{DrainMachine: &pb.DrainMachine{NodeId: e.NodeID}}}
	case registry.EntryCreateTenant:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_CreateTenant{CreateTenant: &pb.CreateTenant{
			Request: e.Request, Name: e.Name, TenantId: e.TenantID}}}
	case registry.EntryDeleteTenant:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_DeleteTenant{DeleteTenant: &pb.DeleteTenant{
			Request: e.Request, Name: e.Name}}}
	case registry.EntryCreateJournal:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_CreateJournal{CreateJournal: &pb.CreateJournal{
			Request: e.Request, Tenant: e.Tenant, Name: e.Name, JournalId: e.JournalID, Placement: PlacementToPB(e.Placement)}}}
	case registry.EntryDeleteJournal:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_DeleteJournal{DeleteJournal: &pb.DeleteJournal{
			Request: e.Request, Tenant: e.Tenant, Name: e.Name}}}
	case registry.EntryJournalGone:
		return &pb.RegistryEntry{Entry: &pb.RegistryEntry_JournalGone{JournalGone: &pb.JournalGone{Journal: idToPB(e.Journal)}}}
	}
	return &pb.RegistryEntry{}
}

// PlacementFromPB is p as a registry placement (the zero one for nil).
func PlacementFromPB(p *pb.JournalPlacement) registry.Placement {
	return registry.Placement{
		Members:      append([]uint64(nil), p.GetMembers()...),
		QuorumSystem: registry.QuorumSystem(p.GetQuorumSystem()),
		Phase1Quorum: p.GetPhase1Quorum(), Phase2Quorum: p.GetPhase2Quorum(),
		Rows: p.GetRows(), Cols: p.GetCols(),
		WriterMode: registry.WriterMode(p.GetWriterMode()),
	}
}

// PlacementToPB is p as a pb.JournalPlacement.
func PlacementToPB(p registry.Placement) *pb.JournalPlacement {
	return &pb.JournalPlacement{
		Members:      append([]uint64(nil), p.Members...),
		QuorumSystem: pb.QuorumSystem(p.QuorumSystem),
		Phase1Quorum: p.Phase1Quorum, Phase2Quorum: p.Phase2Quorum,
		Rows: p.Rows, Cols: p.Cols,
		WriterMode: pb.WriterMode(p.WriterMode),
	}
}

// SnapshotToPB is snap as a pb.RegistryState, in snap's order.
func SnapshotToPB(snap registry.Snapshot) *pb.RegistryState {
	st := &pb.RegistryState{}
	for _, m := range snap.Machines {
		st.Machines = append(st.Machines, &pb.RegistryMachine{NodeId: m.ID, Addr: m.Addr,
			FailureDomain: m.FailureDomain, State: pb.MachineState(m.State)})
	}
	for _, t := range snap.Tenants {
		pt := &pb.RegistryTenant{TenantId: t.ID, Name: t.Name}
		for _, j := range t.Journals {
			pt.Journals = append(pt.Journals, &pb.RegistryJournal{JournalId: j.ID.Journal, Name: j.Name,
				Placement: PlacementToPB(j.Placement), Standing: pb.JournalStanding(j.Standing),
				CreatedAt: uint64(j.CreatedAt)})
		}
		st.Tenants = append(st.Tenants, pt)
	}
	for _, o := range snap.Outcomes {
		po := &pb.RegistryOutcome{Request: o.Request, Kind: o.Kind}
		if o.Journal != (journal.ID{}) {
			po.Journal = idToPB(o.Journal)
		}
		st.Outcomes = append(st.Outcomes, po)
	}
	for _, id := range snap.Gone {
		st.Gone = append(st.Gone, idToPB(id))
	}
	return st
}

// SnapshotFromPB is st as a registry snapshot, in st's order. Each journal
// takes its tenant's id and name.
func SnapshotFromPB(st *pb.RegistryState) registry.Snapshot {
	var snap registry.Snapshot
	for _, m := range st.GetMachines() {
		snap.Machines = append(snap.Machines, registry.Machine{ID: m.GetNodeId(), Addr: m.GetAddr(),
			FailureDomain: m.GetFailureDomain(), State: registry.MachineState(m.GetState())})
	}
	for _, t := range st.GetTenants() {
		ts := registry.TenantSnapshot{Tenant: registry.Tenant{ID: t.GetTenantId(), Name: t.GetName()}}
		for _, j := range t.GetJournals() {
			ts.Journals = append(ts.Journals, registry.Journal{
				ID:     journal.ID{Tenant: t.GetTenantId(), Journal: j.GetJournalId()},
				Tenant: t.GetName(), Name: j.GetName(), Placement: PlacementFromPB(j.GetPlacement()),
				Standing: registry.Standing(j.GetStanding()), CreatedAt: journal.Seq(j.GetCreatedAt())})
		}
		snap.Tenants = append(snap.Tenants, ts)
	}
	for _, o := range st.GetOutcomes() {
		snap.Outcomes = append(snap.Outcomes, registry.RecordedOutcome{Request: o.GetRequest(),
			Outcome: registry.Outcome{Kind: o.GetKind(), Journal: idFromPB(o.GetJournal())}})
	}
	for _, id := range st.GetGone() {
		snap.Gone = append(snap.Gone, idFromPB(id))
	}
	return snap
}

func idToPB(id journal.ID) *pb.JournalId {
	return &pb.JournalId{Tenant: id.Tenant, Journal: id.Journal}
}

func idFromPB(id *pb.JournalId) journal.ID {
	return journal.ID{Tenant: id.GetTenant(), Journal: id.GetJournal()}
}
