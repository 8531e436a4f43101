package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// parseJournal reads a journal reference: a name (TENANT/NAME, or NAME in
// the default tenant), resolved through the cell's registry, or an id
// (id:TENANT/JOURNAL, or two halves of 16 hex digits, as journal show
// prints them).
func parseJournal(s string) (journal.ID, error) {
	id, isName, err := client.ParseRef(strings.TrimSpace(s))
	if err != nil {
		return journal.ID{}, fail(exitBadArgs, "journal %q: want a name TENANT/NAME, or an id TENANT/JOURNAL in hex", s)
	}
	if !isName {
		return id, nil
	}
	if err := client.CheckName(strings.TrimSpace(s)); err != nil {
		return journal.ID{}, fail(exitBadArgs, "journal %q: %v", s, err)
	}
	if resolveName == nil {
		return journal.ID{}, fail(exitBadArgs, "journal %q: names need a cell to resolve them", s)
	}
	return resolveName(strings.TrimSpace(s))
}

// resolveName resolves a journal name through the cell's registry (set
// once the root command parsed its flags).
var resolveName func(ref string) (journal.ID, error)

// resolveWith resolves names with one Client of g, dialled on first use.
func resolveWith(g *globals) func(string) (journal.ID, error) {
	return func(ref string) (journal.ID, error) {
		c, err := g.dial()
		if err != nil {
			return journal.ID{}, err
		}
		defer c.Close()
		ctx, cancel := g.ctx()
		defer cancel()
		id, err := c.Resolve(ctx, ref)
		switch {
		case errors.Is(err, client.ErrUnknownJournal):
			return journal.ID{}, fail(exitRefused, "journal %q: no live journal has that name", ref)
		case errors.Is(err, client.ErrNoControlPlane):
			return journal.ID{}, fail(exitRefused, "journal %q: the cell has no control plane (formed without one): use the journal's id", ref)
		case err != nil:
			return journal.ID{}, controlExit(err)
		}
		return id, nil
	}
}

// parseUUID reads a writer fence (a uuid): 32 hex digits (dashes
// ignored). "" and "none" are the unset fence.
func parseUUID(s string) (journal.LeaderUUID, error) {
	if s == "" || s == "none" {
		return journal.LeaderUUID{}, nil
	}
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		return journal.LeaderUUID{}, fail(exitBadArgs, "fence %q: want 32 hex digits", s)
	}
	return journal.LeaderUUID{Hi: binary.BigEndian.Uint64(b), Lo: binary.BigEndian.Uint64(b[8:])}, nil
}

// formatUUID prints a writer fence as parseUUID reads it, "none" when unset.
func formatUUID(u journal.LeaderUUID) string {
	if !u.IsSet() {
		return "none"
	}
	return fmt.Sprintf("%016x%016x", u.Hi, u.Lo)
}

// parseNode reads a node id: hex, as cell inspect prints it (node=...).
func parseNode(s string) (admin.NodeID, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimSpace(s), "0x"), 16, 64)
	if err != nil || n == 0 {
		return 0, fail(exitBadArgs, "node %q: want a node id in hex, as cell inspect prints it", s)
	}
	return admin.NodeID(n), nil
}

// parseBallot reads a ballot ROUND.NODE (round decimal, node hex), as journal inspect
// prints it (gc_watermark=...).
func parseBallot(s string) (admin.Ballot, error) {
	b, err := admin.ParseBallot(s)
	if err != nil {
		return admin.Ballot{}, fail(exitBadArgs, "%v (as journal inspect prints gc_watermark)", err)
	}
	return b, nil
}

// nodeList prints node ids as --members reads them: hex, comma-separated.
func nodeList(ids []admin.NodeID) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("%016x", id)
	}
	return strings.Join(out, ",")
}
