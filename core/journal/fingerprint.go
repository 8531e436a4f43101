package journal

import "encoding/binary"

// FNV-1a 64 constants (frozen: fingerprints travel in Accepted messages and a
// change would make mixed-version nodes disagree).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

type fnv64 uint64

func (h *fnv64) byte1(b byte) {
	*h ^= fnv64(b)
	*h *= fnvPrime64
}

func (h *fnv64) bytes(p []byte) {
	x := *h
	for _, b := range p {
		x ^= fnv64(b)
		x *= fnvPrime64
	}
	*h = x
}

func (h *fnv64) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	h.bytes(b[:])
}

func (h *fnv64) uuid(u LeaderUUID) {
	h.u64(u.Hi)
	h.u64(u.Lo)
}

// Fingerprint is FNV-1a 64 over the command's variant tag and every field,
// lengths included, so that no two distinct commands are framed alike (a
// record boundary moved between two records changes the hash). A leader
// credits an Accepted only when its fingerprint matches the value it
// proposed at that (slot, ballot).
func (c Command) Fingerprint() uint64 {
	h := fnv64(fnvOffset64)
	h.byte1(byte(c.Kind))
	switch c.Kind {
	case KindWrite:
		h.uuid(c.Entry.Leader)
		h.u64(uint64(c.Entry.Seq))
		h.u64(uint64(len(c.Entry.Records)))
		for _, r := range c.Entry.Records {
			h.u64(uint64(len(r)))
			h.bytes(r)
		}
	case KindTruncate:
		h.uuid(c.Leader)
		h.u64(uint64(c.UpTo))
	case KindSetLeader:
		h.uuid(c.New)
		h.uuid(c.Old)
	}
	return uint64(h)
}
