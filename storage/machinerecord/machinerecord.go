// Package machinerecord keeps a machine's identity and cell plan in one small
// file, rewritten atomically: write a temporary file, fsync it, rename it
// over the record, fsync the directory. A crash at any point leaves the old
// record or the new one, never a mix and never nothing where a record was.
//
// The file works over pebble's vfs.FS, so tests crash it on the same
// crashable in-memory filesystem as the store.
//
// # File format (version 1, frozen)
//
//	line  content
//	----  ------------------------------------------------------------
//	1     paros machine record v1
//	2     the Record as canonical JSON (encoding/json, field order fixed)
//	3     crc32c XXXXXXXX   (lower-case hex CRC-32C of lines 1 and 2,
//	      newlines included)
//
// Each line ends in "\n"; nothing follows line 3. Load refuses anything else
// with ErrDamaged (which matches storage.ErrCorruption), including a record
// that decodes but is not in canonical form or breaks Validate. A file
// larger than recordBytesMax is refused before it is read.
package machinerecord

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/storage"
)

// Names and limits (frozen: FileName and the header are on disk).
const (
	// FileName is the record's name inside its directory.
	FileName = "MACHINE"
	// tempName is the file a rewrite goes through; a stale one is ignored.
	tempName = "MACHINE.tmp"
	header   = "paros machine record v1\n"
	crcTag   = "crc32c "

	recordBytesMax = 16 << 20
	membersMax     = 1 << 10
	journalsMax    = 1 << 17
	addrBytesMax   = 1 << 10
)

// Errors. A damaged record is a corruption: errors.Is(err,
// storage.ErrCorruption) holds for it.
var (
	ErrMissing = errors.New("paros/machinerecord: no machine record")
	ErrDamaged = fmt.Errorf("%w: machine record damaged", storage.ErrCorruption)
	ErrInvalid = errors.New("paros/machinerecord: invalid machine record")
)

// Member is one founding member of the cell.
type Member struct {
	NodeID uint64 `json:"node_id"`
	Addr   string `json:"addr"`
}

// JournalID is a journal of the cell plan.
type JournalID struct {
	Tenant  uint64 `json:"tenant"`
	Journal uint64 `json:"journal"`
}

// Record is what a machine knows about itself before any store is open.
type Record struct {
	// NodeID is minted once, on the first start in an empty data dir.
	NodeID uint64 `json:"node_id"`
	// CellID is 0 until the machine joined a cell.
	CellID uint64 `json:"cell_id"`
	// Members is the cell's founding membership (empty before a cell).
	Members []Member `json:"members"`
	// Journals is the cell plan's journals.
	Journals []JournalID `json:"journals"`
	// Incarnation counts rewrites of the record.
	Incarnation uint64 `json:"incarnation"`
	// The cell-init decree's acceptor state: the highest ballot promised,
	// and the ballot the plan above (CellID, Members, Journals) was voted
	// at. A vote is written only after the plan's stores are formatted.
	PromisedRound uint64 `json:"promised_round"`
	PromisedNode  uint64 `json:"promised_node"`
	VoteRound     uint64 `json:"vote_round"`
	VoteNode      uint64 `json:"vote_node"`

	// Matchmaker Paxos (all empty on a plain cell, so a record written
	// before these fields existed reads and re-encodes unchanged).
	//
	// Matchmakers is the cell's founding matchmaker set (node ids,
	// generation 1): by default every founding member. A handover
	// replaces it (MatchmakerGeneration, MatchmakerSet below). Admitted are the machines admitted to the
	// cell after formation (not founders: they hold no vote of the plan).
	// Joined are the journals this machine joined by reconfiguration, with
	// the configuration its store was formatted for; Retired, the journals
	// it retired from (its store there is deleted, and it never serves
	// them again).
	Matchmakers []uint64 `json:"matchmakers,omitempty"`
	// MatchmakerGeneration and MatchmakerSet are the newest chosen
	// matchmaker set this machine learned (a handover replaced the
	// founding one, Matchmakers, which is generation 1); zero and empty
	// until then. A restarted node matchmakes with it: the founders may
	// all be gone by then.
	MatchmakerGeneration uint64   `json:"matchmaker_generation,omitempty"`
	MatchmakerSet        []uint64 `json:"matchmaker_set,omitempty"`
	// MatchmakerRegistry: this admitted node machine's registry store was
	// formatted when it joined the cell. A record of an admitted node
	// machine without it was written by a version before matchmaker-set
	// generations, when admitted machines ran no matchmaker: such a
	// machine was never a member of any set, and gets a fresh registry at
	// its next start instead of being refused as amnesia.
	MatchmakerRegistry bool            `json:"matchmaker_registry,omitempty"`
	Admitted           []Member        `json:"admitted,omitempty"`
	Joined             []JoinedJournal `json:"joined,omitempty"`
	Retired            []JournalID     `json:"retired,omitempty"`

	// Replicas are the cell plan's replica machines (the replica tier),
	// sorted by node id: learners of every journal that vote on nothing.
	// Empty on a cell without replicas, so a record written before the
	// field existed reads and re-encodes unchanged. A record whose NodeID
	// is among them is a replica machine's (Replica): not a founder, it
	// holds no vote of the plan.
	Replicas []Member `json:"replicas,omitempty"`
	// ReplicaRemoved is set on a replica machine's own record when the
	// operator took it off the cell's replica list (Machine.SetReplicas):
	// it stays a replica machine (Replica) and keeps its stores, but is no
	// longer in Replicas, so no acceptor answers it. A later list naming
	// it again clears the flag. Absent (false) on every other record, so a
	// record written before the field existed reads and re-encodes
	// unchanged.
	ReplicaRemoved bool `json:"replica_removed,omitempty"`
	// Proxies are the cell's proxy leaders (paros serve --role proxy),
	// sorted by node id: each journal's leader delegates Phase 2 to them;
	// they vote on nothing and keep no store. Named at formation, changed
	// since by the operator (Machine.SetProxies). Empty on a cell without
	// proxies, so a record written before the field existed reads and
	// re-encodes unchanged. A record whose NodeID is among them is a proxy
	// machine's (Proxy).
	Proxies []Member `json:"proxies,omitempty"`
	// ProxyRemoved is set on a proxy machine's own record when the
	// operator took it off the cell's proxy list (Machine.SetProxies): it
	// stays a proxy machine (Proxy) and boots as one, but is no longer in
	// Proxies, so no leader delegates to it. A later list naming it again
	// clears the flag. Absent (false) on every other record, so a record
	// written before the field existed reads and re-encodes unchanged.
	ProxyRemoved bool `json:"proxy_removed,omitempty"`
	// Control and Election are the cell's control journal (the registry,
	// single-writer) and its election journal (multi-writer), served by
	// every founding member over the founders with a majority quorum. Nil
	// on a cell formed without a control plane (a record written before
	// the fields existed reads and re-encodes unchanged). Part of the plan.
	Control  *JournalID `json:"control,omitempty"`
	Election *JournalID `json:"election,omitempty"`
	// ControlApplied is the control-journal position below which this
	// machine has applied every placement to itself: a journal created
	// below it and not among Joined is never formatted here (it was
	// deleted, or its store was lost: formatting it afresh would be a
	// member rejoining with amnesia).
	ControlApplied uint64 `json:"control_applied,omitempty"`
}

// JoinedJournal is a journal a machine joined: the configuration the
// joiner's store was formatted for (its format marker), and whether the
// format completed (a crash between recording the join and formatting
// leaves Formatted false; the next start formats, or adopts a store
// formatted under exactly this configuration).
type JoinedJournal struct {
	Tenant    uint64   `json:"tenant"`
	Journal   uint64   `json:"journal"`
	Members   []uint64 `json:"members"`
	Kind      uint8    `json:"kind"`
	Q1        int      `json:"q1,omitempty"`
	Q2        int      `json:"q2,omitempty"`
	Rows      int      `json:"rows,omitempty"`
	Cols      int      `json:"cols,omitempty"`
	Mode      uint8    `json:"mode"`
	Formatted bool     `json:"formatted,omitempty"`
	// Created: the journal was created by the control plane with this
	// machine among its bootstrap acceptors (a founding member of the
	// journal, not a joiner of a reconfiguration).
	Created bool `json:"created,omitempty"`
}

// ID is the journal's id.
func (j JoinedJournal) ID() journal.ID { return journal.ID{Tenant: j.Tenant, Journal: j.Journal} }

// Founder reports whether the record's machine is a founding member.
func (r Record) Founder() bool {
	for _, m := range r.Members {
		if m.NodeID == r.NodeID {
			return true
		}
	}
	return false
}

// Replica reports whether the record's machine is one of the cell's
// replica machines: listed in Replicas, or removed from the list
// (ReplicaRemoved).
func (r Record) Replica() bool {
	if r.ReplicaRemoved {
		return true
	}
	return r.listed()
}

// Proxy reports whether the record's machine is one of the cell's proxy
// machines: listed in Proxies, or removed from the list (ProxyRemoved).
func (r Record) Proxy() bool {
	if r.ProxyRemoved {
		return true
	}
	return r.proxyListed()
}

// proxyListed reports whether the record's NodeID is in Proxies.
func (r Record) proxyListed() bool {
	for _, m := range r.Proxies {
		if m.NodeID == r.NodeID {
			return true
		}
	}
	return false
}

// listed reports whether the record's NodeID is in Replicas.
func (r Record) listed() bool {
	for _, m := range r.Replicas {
		if m.NodeID == r.NodeID {
			return true
		}
	}
	return false
}

// ID converts a plan journal to a journal.ID.
func (j JournalID) ID() journal.ID { return journal.ID{Tenant: j.Tenant, Journal: j.Journal} }

// Validate refuses a record no machine could have written.
func (r Record) Validate() error {
	if r.NodeID == 0 {
		return fmt.Errorf("%w: node id 0", ErrInvalid)
	}
	if len(r.Members) > membersMax || len(r.Journals) > journalsMax {
		return fmt.Errorf("%w: %d members, %d journals", ErrInvalid, len(r.Members), len(r.Journals))
	}
	if r.CellID == 0 && len(r.Members)+len(r.Journals) > 0 {
		return fmt.Errorf("%w: a cell plan without a cell id", ErrInvalid)
	}
	if r.PromisedRound > paxos.BallotRoundMax || r.VoteRound > paxos.BallotRoundMax {
		return fmt.Errorf("%w: a ballot round above %d", ErrInvalid, uint64(paxos.BallotRoundMax))
	}
	if r.CellID == 0 && r.VoteRound != 0 || r.CellID != 0 && (r.VoteRound != 0) != r.Founder() {
		return fmt.Errorf("%w: a founder's cell plan comes with the ballot it was voted at, an admitted machine's without", ErrInvalid)
	}
	if r.CellID == 0 && len(r.Matchmakers)+len(r.Admitted)+len(r.Joined)+len(r.Retired) > 0 {
		return fmt.Errorf("%w: cell facts without a cell id", ErrInvalid)
	}
	if len(r.Matchmakers) > membersMax || len(r.Admitted) > membersMax || len(r.Joined) > journalsMax || len(r.Retired) > journalsMax {
		return fmt.Errorf("%w: too many cell facts", ErrInvalid)
	}
	for i, id := range r.Matchmakers {
		if id == 0 || i > 0 && r.Matchmakers[i-1] >= id {
			return fmt.Errorf("%w: matchmakers %v not sorted, distinct and nonzero", ErrInvalid, r.Matchmakers)
		}
	}
	if r.MatchmakerGeneration != 0 || len(r.MatchmakerSet) > 0 {
		// A set learned by a handover: of a cell with matchmakers, at
		// generation 2 or later, 1 to membersMax sorted distinct ids.
		if len(r.Matchmakers) == 0 || r.MatchmakerGeneration < 2 || r.MatchmakerGeneration > 1<<62 ||
			len(r.MatchmakerSet) == 0 || len(r.MatchmakerSet) > membersMax {
			return fmt.Errorf("%w: matchmaker set %v of generation %d", ErrInvalid, r.MatchmakerSet, r.MatchmakerGeneration)
		}
		for i, id := range r.MatchmakerSet {
			if id == 0 || i > 0 && r.MatchmakerSet[i-1] >= id {
				return fmt.Errorf("%w: matchmaker set %v not sorted, distinct and nonzero", ErrInvalid, r.MatchmakerSet)
			}
		}
	}
	for _, m := range r.Admitted {
		if m.NodeID == 0 || len(m.Addr) > addrBytesMax {
			return fmt.Errorf("%w: admitted machine %d %q", ErrInvalid, m.NodeID, m.Addr)
		}
	}
	for _, j := range r.Joined {
		if !j.ID().IsSet() || len(j.Members) == 0 || len(j.Members) > membersMax {
			return fmt.Errorf("%w: joined journal %s", ErrInvalid, j.ID())
		}
	}
	seen := make(map[uint64]bool, len(r.Members))
	for _, m := range r.Members {
		if m.NodeID == 0 || seen[m.NodeID] || len(m.Addr) > addrBytesMax {
			return fmt.Errorf("%w: member %d %q", ErrInvalid, m.NodeID, m.Addr)
		}
		seen[m.NodeID] = true
	}
	if r.CellID == 0 && len(r.Replicas) > 0 {
		return fmt.Errorf("%w: replicas without a cell id", ErrInvalid)
	}
	if len(r.Replicas) > paxos.ReplicasMax {
		return fmt.Errorf("%w: %d replicas (at most %d)", ErrInvalid, len(r.Replicas), paxos.ReplicasMax)
	}
	for i, m := range r.Replicas {
		// A replica is never a founder: it would vote and learn at once.
		if m.NodeID == 0 || seen[m.NodeID] || len(m.Addr) > addrBytesMax || i > 0 && r.Replicas[i-1].NodeID >= m.NodeID {
			return fmt.Errorf("%w: replica %d %q (replicas are sorted, distinct, nonzero and no member)", ErrInvalid, m.NodeID, m.Addr)
		}
	}
	for _, m := range r.Replicas {
		seen[m.NodeID] = true
	}
	if r.CellID == 0 && len(r.Proxies) > 0 {
		return fmt.Errorf("%w: proxies without a cell id", ErrInvalid)
	}
	if len(r.Proxies) > paxos.ProxiesMax {
		return fmt.Errorf("%w: %d proxies (at most %d)", ErrInvalid, len(r.Proxies), paxos.ProxiesMax)
	}
	for i, m := range r.Proxies {
		// A proxy is no member and no replica: it would tally votes it
		// casts, or learn what it announces.
		if m.NodeID == 0 || seen[m.NodeID] || len(m.Addr) > addrBytesMax || i > 0 && r.Proxies[i-1].NodeID >= m.NodeID {
			return fmt.Errorf("%w: proxy %d %q (proxies are sorted, distinct, nonzero, no member and no replica)", ErrInvalid, m.NodeID, m.Addr)
		}
	}
	if r.Proxy() && (r.Founder() || r.ReplicaRemoved || len(r.Joined) > 0) {
		return fmt.Errorf("%w: a proxy machine is no founder, no replica and serves no joined journal", ErrInvalid)
	}
	if r.ProxyRemoved && (r.CellID == 0 || r.proxyListed() || r.Founder() || r.listed() || len(r.Joined) > 0) {
		return fmt.Errorf("%w: a removed proxy is a proxy machine of a cell, off its proxy list, no founder, no replica, and serves no joined journal", ErrInvalid)
	}
	if r.ReplicaRemoved && (r.CellID == 0 || r.listed() || r.Founder() || len(r.Joined) > 0) {
		return fmt.Errorf("%w: a removed replica is a replica machine of a cell, off its replica list, and serves no joined journal", ErrInvalid)
	}
	ids := make(map[JournalID]bool, len(r.Journals))
	for _, j := range r.Journals {
		if !j.ID().IsSet() || ids[j] {
			return fmt.Errorf("%w: journal %s", ErrInvalid, j.ID())
		}
		ids[j] = true
	}
	if (r.Control == nil) != (r.Election == nil) || r.Control != nil && r.CellID == 0 {
		return fmt.Errorf("%w: a control journal comes with an election journal, in a cell", ErrInvalid)
	}
	if r.Control != nil {
		c, e := *r.Control, *r.Election
		if !c.ID().IsSet() || !e.ID().IsSet() || c == e || ids[c] || ids[e] {
			return fmt.Errorf("%w: control journal %s, election journal %s", ErrInvalid, c.ID(), e.ID())
		}
	}
	return nil
}

// Encode returns the file bytes of r.
func Encode(r Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	js, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	b := make([]byte, 0, len(header)+len(js)+len(crcTag)+10)
	b = append(b, header...)
	b = append(b, js...)
	b = append(b, '\n')
	sum := storage.CRC32C(b)
	b = append(b, crcTag...)
	b = fmt.Appendf(b, "%08x\n", sum)
	if len(b) > recordBytesMax {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalid, len(b))
	}
	return b, nil
}

// Decode parses file bytes written by Encode. It never panics; every
// refusal is ErrDamaged.
func Decode(p []byte) (Record, error) {
	damaged := func(format string, args ...any) (Record, error) {
		return Record{}, fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, args...))
	}
	if len(p) > recordBytesMax {
		return damaged("%d bytes", len(p))
	}
	if !bytes.HasPrefix(p, []byte(header)) {
		return damaged("no header")
	}
	const crcLine = len(crcTag) + 8 + 1
	if len(p) < len(header)+2+crcLine || p[len(p)-1] != '\n' {
		return damaged("%d bytes", len(p))
	}
	body, tail := p[:len(p)-crcLine], p[len(p)-crcLine:]
	if !bytes.HasPrefix(tail, []byte(crcTag)) || body[len(body)-1] != '\n' {
		return damaged("no checksum line")
	}
	hex := string(tail[len(crcTag) : len(tail)-1])
	want, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || fmt.Sprintf("%08x", want) != hex {
		return damaged("checksum %q", hex)
	}
	if got := storage.CRC32C(body); uint64(got) != want {
		return damaged("crc %08x, stored %08x", got, want)
	}
	js := body[len(header) : len(body)-1]
	if bytes.IndexByte(js, '\n') >= 0 {
		return damaged("record spans lines")
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return damaged("json: %v", err)
	}
	again, err := Encode(r)
	if err != nil {
		return damaged("%v", err)
	}
	if !bytes.Equal(again, p) {
		return damaged("not in canonical form")
	}
	return r, nil
}

// Store writes r as the record in dir, atomically and durably: when Store
// returns nil the new record survives a crash; if it fails or the machine
// crashes, Load returns the old record or the new one. dir must exist.
func Store(fs vfs.FS, dir string, r Record) error {
	b, err := Encode(r)
	if err != nil {
		return err
	}
	tmp, final := fs.PathJoin(dir, tempName), fs.PathJoin(dir, FileName)
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return ioErr("write", err)
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return ioErr("write", err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return ioErr("sync", err)
	}
	if err := f.Close(); err != nil {
		return ioErr("write", err)
	}
	if err := fs.Rename(tmp, final); err != nil {
		return ioErr("write", err)
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return ioErr("sync", err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return ioErr("sync", err)
	}
	return d.Close()
}

// ioErr is a failed step of Store: the rename may or may not have happened.
func ioErr(op string, err error) error {
	return &storage.IOError{Op: op, Outcome: storage.OutcomeUnknown, Err: err}
}

// Load reads the record in dir: ErrMissing if there is none, ErrDamaged
// (a storage.ErrCorruption) if it does not decode.
func Load(fs vfs.FS, dir string) (Record, error) {
	f, err := fs.Open(fs.PathJoin(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, fmt.Errorf("%w in %s", ErrMissing, dir)
	}
	if err != nil {
		return Record{}, &storage.IOError{Op: "read", Outcome: storage.OutcomeLost, Err: err}
	}
	defer func() { _ = f.Close() }()
	p, err := io.ReadAll(io.LimitReader(f, recordBytesMax+1))
	if err != nil {
		return Record{}, &storage.IOError{Op: "read", Outcome: storage.OutcomeLost, Err: err}
	}
	return Decode(p)
}
