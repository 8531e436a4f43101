package main

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

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
