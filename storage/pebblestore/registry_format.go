package pebblestore

// A matchmaker's registries live in the process's one Pebble DB, under a
// keyspace of their own (0x02) that no journal key can reach: a journal's
// keys all start 0x01, the store header 0x00.
//
// # Key schema (frozen: it is on disk)
//
//	key                                                     value          constant
//	------------------------------------------------------  -------------  -------------------
//	02 00                                                   registry mark  regPartMarker
//	02 01 | tenant (8) | journal (8) | 01                   watermark      regKindWatermark
//	02 01 | tenant (8) | journal (8) | 02                   effective      regKindEffective
//	02 01 | tenant (8) | journal (8) | 03 | round | node    registration   regKindRegistration
//	02 01 | tenant (8) | journal (8) | 04                   retracted      regKindRetracted
//	02 02                                                   generation     regPartGeneration
//	02 03 | tenant (8) | journal (8) | 01 to 04 as above    pending        regPartPending
//
// Integers are big-endian, so a journal's registrations sort by ballot and
// come after its watermark: boot knows the watermark when the first
// registration arrives. Raising a watermark is a range delete of
// [registration(j, 0.0), registration(j, watermark)) in the same batch that
// writes the watermark; the effective configuration is its own key, which
// no range delete reaches.
//
// The generation key holds the matchmaker's place in the chain of
// matchmaker sets (matchmaker.Generation) without the registries of its
// pending bootstrap: those are under part 03, one journal's registry in the
// same keys and values as part 01's, so a bootstrap page rewrites only its
// own journals (a bootstrap of 10,000 journals comes in pages of 64) and
// an activation writes them as part 01 unchanged. The generation key sorts
// before every pending key, so boot knows whether a bootstrap is pending
// when the first pending key arrives. Absent, the generation is the
// marker's (matchmaker.BootGeneration). A bootstrap page of a newer
// generation range-deletes part 03 before it writes; an activation
// range-deletes parts 01 and 03, then writes the pending registries under
// part 01 and the new generation, all in one batch.
//
// # Value formats (version 1, frozen)
//
// Every value ends in a CRC-32C over its full key and every byte before the
// CRC (see the package doc), so a value under another journal's or
// ballot's key fails its check, and a pending value under an active key.
//
//	value            layout
//	---------------  -----------------------------------------------------------
//	registry marker  version | node (8) | count m (2) | m x matchmaker (8) | crc
//	watermark        version | round (8) | node (8) | crc   (21 bytes)
//	effective        version | round (8) | node (8) | config | crc
//	registration     version | config | crc   (the ballot is the key's)
//	config           reconfiguration (1: 0 or 1) | member count m (1) |
//	                 m x member (8) | quorum kind (1) | Q1, Q2, Rows, Cols (4 each)
//	generation       version | flags (1: bit 0 stopped) | set | successor set |
//	                 decree promised (16) | decree vote ballot (16) |
//	                 decree vote set | pending generation (8) |
//	                 origin count n (1) | n x origin | crc
//	set              generation (8) | member count m (1) | m x member (8)
//	                 (the zero set: generation 0, no members)
//	origin           ballot (16) | set | pages p (4) | held (ceil(p/8): bit i%8
//	                 of byte i/8 is page i; the unused high bits zero)
//
// A configuration is rebuilt with quorum.New; one that does not rebuild, or
// whose members are not sorted and distinct, is corruption like a bad CRC.
// An effective configuration is always a reconfiguration. A generation
// value is refused unless each of its sets is valid (paxos.MatchmakerSet's
// Validate), its ballots in range, at most matchmaker.OriginsMax origins
// of 1 to matchmaker.PagesMax pages, origins only with a pending
// generation, and a decree vote with both a ballot and a set or neither:
// nothing the matchmaker writes breaks these, and each decodes to one
// encoding. Boot checks the whole state with Generation.Validate.

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/storage"
)

// Registry key schema constants (frozen).
const (
	keyspaceRegistry byte = 0x02

	regPartMarker     byte = 0x00
	regPartJournal    byte = 0x01
	regPartGeneration byte = 0x02
	regPartPending    byte = 0x03

	regKindWatermark    byte = 0x01
	regKindEffective    byte = 0x02
	regKindRegistration byte = 0x03
	// regKindRetracted sorts after every registration of its journal.
	regKindRetracted byte = 0x04

	// regPrefixLen is keyspace | part | tenant | journal.
	regPrefixLen = 2 + 8 + 8
	// regScalarKeyLen is a registry prefix and a kind.
	regScalarKeyLen = regPrefixLen + 1
	// regKeyLen is a scalar key and a ballot.
	regKeyLen = regScalarKeyLen + 16

	watermarkBytes  = 1 + 16 + 4
	configMinBytes  = 1 + 1 + 1 + 16
	regMarkerMin    = 1 + 8 + 2 + 4
	regMembersMax   = quorum.MembersMax
	registryOpsMax  = 1 << 16 // ops of one Apply: every batch has a bound
	regQuorumIntMax = 1<<31 - 1
)

// keyRegistryMarker names the registry marker, keyRegistryGeneration the
// generation state.
var (
	keyRegistryMarker     = []byte{keyspaceRegistry, regPartMarker}
	keyRegistryGeneration = []byte{keyspaceRegistry, regPartGeneration}
)

// appendRegPrefix appends the prefix of journal id's keys in part (its
// registry, or its pending one).
func appendRegPrefix(dst []byte, part byte, id journal.ID) []byte {
	dst = append(dst, keyspaceRegistry, part)
	dst = binary.BigEndian.AppendUint64(dst, id.Tenant)
	return binary.BigEndian.AppendUint64(dst, id.Journal)
}

func regScalarKey(id journal.ID, kind byte) []byte { return regPartScalarKey(regPartJournal, id, kind) }

func regPartScalarKey(part byte, id journal.ID, kind byte) []byte {
	return append(appendRegPrefix(make([]byte, 0, regScalarKeyLen), part, id), kind)
}

func registrationKey(id journal.ID, b paxos.Ballot) []byte {
	return regPartRegistrationKey(regPartJournal, id, b)
}

func regPartRegistrationKey(part byte, id journal.ID, b paxos.Ballot) []byte {
	k := append(appendRegPrefix(make([]byte, 0, regKeyLen), part, id), regKindRegistration)
	return appendBallot(k, b)
}

// registrationsEnd is past every registration key of a journal.
func registrationsEnd(id journal.ID) []byte {
	return regPartScalarKey(regPartJournal, id, regKindRegistration+1)
}

// regJournalBounds returns [lower, upper) covering every key of journal id
// in part (every kind byte is below 0xff).
func regJournalBounds(part byte, id journal.ID) (lower, upper []byte) {
	return appendRegPrefix(make([]byte, 0, regPrefixLen), part, id), regPartScalarKey(part, id, 0xff)
}

// regPartBounds returns [lower, upper) covering every key of part.
func regPartBounds(part byte) (lower, upper []byte) {
	return []byte{keyspaceRegistry, part}, []byte{keyspaceRegistry, part + 1}
}

// parsedRegKey is a key of a journal's registry or pending registry.
type parsedRegKey struct {
	part   byte // regPartJournal or regPartPending
	id     journal.ID
	kind   byte
	ballot paxos.Ballot // regKindRegistration only
}

// parseRegKey splits a registry key of part 01 or 03; ok is false outside
// the schema.
func parseRegKey(k []byte) (parsedRegKey, bool) {
	if len(k) < regScalarKeyLen || k[0] != keyspaceRegistry || (k[1] != regPartJournal && k[1] != regPartPending) {
		return parsedRegKey{}, false
	}
	p := parsedRegKey{
		part: k[1],
		id:   journal.ID{Tenant: binary.BigEndian.Uint64(k[2:]), Journal: binary.BigEndian.Uint64(k[10:])},
		kind: k[regPrefixLen],
	}
	switch p.kind {
	case regKindWatermark, regKindEffective, regKindRetracted:
		return p, len(k) == regScalarKeyLen
	case regKindRegistration:
		if len(k) != regKeyLen {
			return parsedRegKey{}, false
		}
		p.ballot = readBallot(k[regScalarKeyLen:])
		return p, true
	}
	return parsedRegKey{}, false
}

func encodeRegistryMarker(m storage.RegistryMarker) []byte {
	b := make([]byte, 0, regMarkerMin+8*len(m.Matchmakers))
	b = append(b, valueV1)
	b = binary.BigEndian.AppendUint64(b, uint64(m.Node))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Matchmakers)))
	for _, id := range m.Matchmakers {
		b = binary.BigEndian.AppendUint64(b, uint64(id))
	}
	return seal(keyRegistryMarker, b)
}

// decodeRegistryMarker checks length and CRC, and that the marker is valid.
func decodeRegistryMarker(v []byte) (storage.RegistryMarker, error) {
	if len(v) < regMarkerMin {
		return storage.RegistryMarker{}, valueErr("registry marker of %d bytes", len(v))
	}
	n := int(binary.BigEndian.Uint16(v[9:]))
	if n > storage.RegistryMatchmakersMax {
		return storage.RegistryMarker{}, valueErr("registry marker with %d matchmakers", n)
	}
	p, err := unseal(keyRegistryMarker, v, regMarkerMin+8*n)
	if err != nil {
		return storage.RegistryMarker{}, err
	}
	m := storage.RegistryMarker{Node: paxos.NodeID(binary.BigEndian.Uint64(p)), Matchmakers: make([]paxos.NodeID, n)}
	for i := range m.Matchmakers {
		m.Matchmakers[i] = paxos.NodeID(binary.BigEndian.Uint64(p[10+8*i:]))
	}
	if err := m.Validate(); err != nil {
		return storage.RegistryMarker{}, valueErr("%v", err)
	}
	return m, nil
}

func encodeWatermark(key []byte, w paxos.Ballot) []byte {
	return seal(key, appendBallot(append(make([]byte, 0, watermarkBytes), valueV1), w))
}

func decodeWatermark(key, v []byte) (paxos.Ballot, error) {
	p, err := unseal(key, v, watermarkBytes)
	if err != nil {
		return paxos.Ballot{}, err
	}
	w := readBallot(p)
	if w.IsZero() || !w.InRange() {
		return paxos.Ballot{}, valueErr("watermark %s", w)
	}
	return w, nil
}

// appendConfig appends a registration's configuration.
func appendConfig(dst []byte, reg paxos.Registration) []byte {
	members, spec := reg.Acceptors.Members(), reg.Acceptors.Spec()
	if len(members) == 0 || len(members) > regMembersMax {
		panic(fmt.Sprintf("pebblestore: registration %s with %d members", reg.Ballot, len(members)))
	}
	for _, v := range []int{spec.Q1, spec.Q2, spec.Rows, spec.Cols} {
		if v < 0 || v > regQuorumIntMax {
			panic(fmt.Sprintf("pebblestore: registration %s quorum parameter %d", reg.Ballot, v))
		}
	}
	flag := byte(0)
	if reg.Reconfiguration {
		flag = 1
	}
	dst = append(dst, flag, byte(len(members)))
	for _, id := range members {
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
	}
	dst = append(dst, byte(spec.Kind))
	for _, v := range []int{spec.Q1, spec.Q2, spec.Rows, spec.Cols} {
		dst = binary.BigEndian.AppendUint32(dst, uint32(v))
	}
	return dst
}

// readConfig decodes a configuration that must fill p exactly.
func readConfig(p []byte) (reconf bool, acceptors quorum.System, err error) {
	if len(p) < configMinBytes || p[0] > 1 {
		return false, quorum.System{}, valueErr("configuration of %d bytes", len(p))
	}
	n := int(p[1])
	if n == 0 || n > regMembersMax || len(p) != configMinBytes+8*n {
		return false, quorum.System{}, valueErr("configuration of %d members in %d bytes", n, len(p))
	}
	members := make([]paxos.NodeID, n)
	for i := range members {
		members[i] = paxos.NodeID(binary.BigEndian.Uint64(p[2+8*i:]))
	}
	q := p[2+8*n:]
	i32 := func(i int) int { return int(int32(binary.BigEndian.Uint32(q[1+4*i:]))) }
	spec := quorum.Spec{Kind: quorum.Kind(q[0]), Q1: i32(0), Q2: i32(1), Rows: i32(2), Cols: i32(3)}
	acceptors, err = quorum.New(members, spec)
	if err != nil {
		return false, quorum.System{}, valueErr("configuration %v %+v: %v", members, spec, err)
	}
	if !slices.Equal(acceptors.Members(), members) || acceptors.Spec() != spec {
		return false, quorum.System{}, valueErr("configuration %v %+v is not canonical", members, spec)
	}
	return p[0] == 1, acceptors, nil
}

func encodeRegistration(key []byte, reg paxos.Registration) []byte {
	return seal(key, appendConfig([]byte{valueV1}, reg))
}

func decodeRegistration(key []byte, b paxos.Ballot, v []byte) (paxos.Registration, error) {
	p, err := unseal(key, v, -1)
	if err != nil {
		return paxos.Registration{}, err
	}
	if b.IsZero() || !b.InRange() {
		return paxos.Registration{}, valueErr("registration at ballot %s", b)
	}
	reconf, acc, err := readConfig(p)
	if err != nil {
		return paxos.Registration{}, err
	}
	return paxos.Registration{Ballot: b, Acceptors: acc, Reconfiguration: reconf}, nil
}

func encodeEffective(key []byte, reg paxos.Registration) []byte {
	if !reg.Reconfiguration {
		panic(fmt.Sprintf("pebblestore: effective configuration %s is not a reconfiguration", reg))
	}
	return seal(key, appendConfig(appendBallot([]byte{valueV1}, reg.Ballot), reg))
}

func decodeEffective(key, v []byte) (paxos.Registration, error) {
	p, err := unseal(key, v, -1)
	if err != nil {
		return paxos.Registration{}, err
	}
	if len(p) < 16 {
		return paxos.Registration{}, valueErr("effective of %d bytes", len(v))
	}
	b := readBallot(p)
	if b.IsZero() || !b.InRange() {
		return paxos.Registration{}, valueErr("effective at ballot %s", b)
	}
	reconf, acc, err := readConfig(p[16:])
	if err != nil {
		return paxos.Registration{}, err
	}
	if !reconf {
		return paxos.Registration{}, valueErr("effective %s is not a reconfiguration", b)
	}
	return paxos.Registration{Ballot: b, Acceptors: acc, Reconfiguration: true}, nil
}
