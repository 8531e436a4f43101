package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// parseJournal reads TENANT/JOURNAL (hex halves, as inspect prints them).
func parseJournal(s string) (journal.ID, error) {
	id, err := journal.ParseID(strings.TrimPrefix(s, "id:"))
	if err != nil {
		return journal.ID{}, fail(exitBadArgs, "journal %q: want TENANT/JOURNAL in hex, both set", s)
	}
	return id, nil
}

// parseUUID reads a writer uuid: 32 hex digits (dashes ignored). "" and
// "none" are the unset uuid.
func parseUUID(s string) (journal.LeaderUUID, error) {
	if s == "" || s == "none" {
		return journal.LeaderUUID{}, nil
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		return journal.LeaderUUID{}, fail(exitBadArgs, "leader uuid %q: want 32 hex digits", s)
	}
	return journal.LeaderUUID{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}, nil
}

// formatUUID prints a writer uuid as parseUUID reads it, "none" when unset.
func formatUUID(u journal.LeaderUUID) string {
	if !u.IsSet() {
		return "none"
	}
	return fmt.Sprintf("%016x%016x", u.Hi, u.Lo)
}

// parseNode reads a node id: hex, as inspect prints it (node=...).
func parseNode(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 64)
	if err != nil || n == 0 {
		return 0, fail(exitBadArgs, "node %q: want a node id in hex, as inspect prints it", s)
	}
	return n, nil
}

// parseBallot reads a ballot ROUND.NODE, both decimal, as inspect prints
// it (gc_watermark=...).
func parseBallot(s string) (client.Ballot, error) {
	r, n, ok := strings.Cut(strings.TrimSpace(s), ".")
	round, err1 := strconv.ParseUint(r, 10, 64)
	node, err2 := strconv.ParseUint(n, 10, 64)
	if !ok || err1 != nil || err2 != nil || round == 0 {
		return client.Ballot{}, fail(exitBadArgs, "ballot %q: want ROUND.NODE in decimal, as inspect prints gc_watermark", s)
	}
	return client.Ballot{Round: round, Node: node}, nil
}

// nodeList prints node ids as --members reads them: hex, comma-separated.
func nodeList(ids []uint64) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%016x", id)
	}
	return strings.Join(out, ",")
}
