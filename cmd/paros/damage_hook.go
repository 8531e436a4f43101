//go:build parostesthooks

package main

// This file exists only in binaries built with -tags parostesthooks: it adds
// POST /debug/damage?journal=TENANT/JOURNAL&slot=N to the admin HTTP listener
// (--metrics), which rots the stored value of the record at slot N of that
// journal on this machine's disk, as a drive would (pebblestore's
// DamageValue: one bit flipped, synced, the record's identity intact). The
// black-box scrub test drives it. A production binary has no such endpoint:
// without the tag debugHandlers stays nil.

import (
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/machine"
)

func init() { debugHandlers = registerDamage }

// registerDamage adds the damage endpoint of machine m to mux. It answers
// 200 "damaged", 404 "no record" (slot holds no record here) or "unknown
// journal" (m serves no such journal), 400 on a malformed request, 405 on
// anything but POST, 500 when the store fails.
func registerDamage(mux *http.ServeMux, m *machine.Machine, log *slog.Logger) {
	mux.HandleFunc("/debug/damage", func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		id, err := journal.ParseID(req.URL.Query().Get("journal"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		slot, err := strconv.ParseUint(req.URL.Query().Get("slot"), 10, 64)
		if err != nil || slot == 0 {
			http.Error(w, fmt.Sprintf("slot %q: want a slot number above 0", req.URL.Query().Get("slot")), http.StatusBadRequest)
			return
		}
		// Only a journal the machine serves: the store would hand out a
		// handle for any id.
		rt := m.Runtime()
		if rt == nil || !slices.Contains(rt.Journals(), id) {
			http.Error(w, "unknown journal", http.StatusNotFound)
			return
		}
		found, err := m.PebbleDB().Journal(id).DamageValue(paxos.Slot(slot))
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case !found:
			http.Error(w, "no record", http.StatusNotFound)
		default:
			log.Warn("test hook: damaged a record on disk", "journal", id.String(), "slot", slot)
			fmt.Fprintln(w, "damaged")
		}
	})
}
