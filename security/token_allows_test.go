// This file checks what token claims allow. Claims.Allows and AllowsAny are
// compared with a naive model over every scope shape (every journal, a
// tenant, one journal), every Ops set and a set of journal ids that includes
// the zero ID, which only a scope over every journal grants. ParseOps and
// Op.String are checked on subsets, unknown words and the empty set.
package security

import (
	"testing"

	"github.com/parosdb/paros/core/journal"
)

// Scope shapes of the Allows model.
const (
	shapeAll     = iota // Tenant 0: every journal
	shapeTenant         // Tenant T, Journal 0: every journal of T
	shapeJournal        // Tenant T, Journal J: one journal
	shapeCount
)

const allowsTenant, allowsJournal = 3, 9

func shapeScope(shape int, ops Op) Scope {
	switch shape {
	case shapeAll:
		return Scope{Ops: ops}
	case shapeTenant:
		return Scope{Tenant: allowsTenant, Ops: ops}
	}
	return Scope{Tenant: allowsTenant, Journal: allowsJournal, Ops: ops}
}

// modelCovers restates which journals a shape covers; the zero ID (an
// admin call on no journal in particular) only a scope over every journal.
func modelCovers(shape int, id journal.ID) bool {
	switch shape {
	case shapeAll:
		return true
	case shapeTenant:
		return id.IsSet() && id.Tenant == allowsTenant
	}
	return id == journal.ID{Tenant: allowsTenant, Journal: allowsJournal}
}

var (
	allowsIDs = []journal.ID{
		{},
		{Tenant: allowsTenant, Journal: allowsJournal},
		{Tenant: allowsTenant, Journal: allowsJournal + 1},
		{Tenant: allowsTenant + 1, Journal: allowsJournal},
		{Tenant: allowsTenant + 1, Journal: allowsJournal + 1},
		{Tenant: 1<<64 - 1, Journal: 1<<64 - 1},
	}
	allowsOps  = []Op{OpRead, OpWrite, OpAdmin, OpRead | OpWrite, OpRead | OpAdmin, OpRead | OpWrite | OpAdmin}
	allOpsSets = []Op{1, 2, 3, 4, 5, 6, 7}
)

func TestAllowsOneScope(t *testing.T) {
	for shape := range shapeCount {
		for _, granted := range allOpsSets {
			c := Claims{Subject: "a", Scopes: []Scope{shapeScope(shape, granted)}}
			for _, id := range allowsIDs {
				for _, op := range allowsOps {
					want := granted&op == op && modelCovers(shape, id)

					got := c.Allows(op, id)

					if got != want {
						t.Errorf("scope %+v: Allows(%v, %v) = %v, want %v", c.Scopes[0], op, id, got, want)
					}
				}
				if got, want := c.AllowsAny(id), modelCovers(shape, id); got != want {
					t.Errorf("scope %+v: AllowsAny(%v) = %v, want %v", c.Scopes[0], id, got, want)
				}
			}
		}
	}
}

// With two scopes a single operation is granted when either grants it.
func TestAllowsTwoScopes(t *testing.T) {
	for shapeA := range shapeCount {
		for _, opsA := range allOpsSets {
			for shapeB := range shapeCount {
				for _, opsB := range allOpsSets {
					a, b := shapeScope(shapeA, opsA), shapeScope(shapeB, opsB)
					c := Claims{Subject: "a", Scopes: []Scope{a, b}}
					for _, id := range allowsIDs {
						for _, op := range []Op{OpRead, OpWrite, OpAdmin} {
							want := (opsA&op != 0 && modelCovers(shapeA, id)) || (opsB&op != 0 && modelCovers(shapeB, id))

							got := c.Allows(op, id)

							if got != want {
								t.Fatalf("scopes %+v: Allows(%v, %v) = %v, want %v", c.Scopes, op, id, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// The zero ID rule spelled out: admin on no journal in particular needs a
// scope over every journal, however much else the claims grant.
func TestAllowsZeroIDAdmin(t *testing.T) {
	tenantAdmin := Claims{Subject: "a", Scopes: []Scope{{Tenant: 3, Ops: OpRead | OpWrite | OpAdmin}}}
	journalAdmin := Claims{Subject: "a", Scopes: []Scope{{Tenant: 3, Journal: 9, Ops: OpRead | OpWrite | OpAdmin}}}
	cellReader := Claims{Subject: "a", Scopes: []Scope{{Ops: OpRead}}}
	cellAdmin := Claims{Subject: "a", Scopes: []Scope{{Tenant: 3, Ops: OpRead}, {Ops: OpAdmin}}}

	for _, tc := range []struct {
		name string
		c    Claims
		want bool
	}{
		{"tenant admin", tenantAdmin, false},
		{"journal admin", journalAdmin, false},
		{"cell reader", cellReader, false},
		{"cell admin", cellAdmin, true},
	} {
		if got := tc.c.Allows(OpAdmin, journal.ID{}); got != tc.want {
			t.Errorf("%s: Allows(admin, ID{}) = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !tenantAdmin.Allows(OpAdmin, journal.ID{Tenant: 3, Journal: 1}) {
		t.Error("tenant admin: not allowed admin on a journal of its tenant")
	}
}

// A scope check refuses (Journal set, Tenant 0) must cover nothing should
// one reach Allows anyway.
func TestCoversMalformedScope(t *testing.T) {
	s := Scope{Journal: 9, Ops: OpRead | OpWrite | OpAdmin}
	for _, id := range append(allowsIDs, journal.ID{Journal: 9}) {
		if s.Covers(id) {
			t.Errorf("%+v covers %v", s, id)
		}
		if (Claims{Scopes: []Scope{s}}).Allows(OpRead, id) {
			t.Errorf("%+v allows read on %v", s, id)
		}
	}
}

func TestParseOps(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Op
	}{
		{"read", OpRead},
		{"write", OpWrite},
		{"admin", OpAdmin},
		{"read,write", OpRead | OpWrite},
		{"write,read", OpRead | OpWrite},
		{"admin,read", OpRead | OpAdmin},
		{"read,write,admin", OpRead | OpWrite | OpAdmin},
		{" admin , write , read ", OpRead | OpWrite | OpAdmin},
		{"read,read", OpRead},
		{"read,,write,", OpRead | OpWrite},
	} {
		got, err := ParseOps(tc.in)

		if err != nil || got != tc.want {
			t.Errorf("ParseOps(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", ",", " , ", "Read", "READ", "delete", "read,delete", "read write", "read;write", "*", "all"} {
		got, err := ParseOps(in)

		if err == nil {
			t.Errorf("ParseOps(%q) = %v, want an error", in, got)
		}
	}
}

func TestOpString(t *testing.T) {
	for _, tc := range []struct {
		op   Op
		want string
	}{
		{0, ""},
		{OpRead, "read"},
		{OpWrite, "write"},
		{OpAdmin, "admin"},
		{OpRead | OpWrite, "read,write"},
		{OpRead | OpAdmin, "read,admin"},
		{OpWrite | OpAdmin, "write,admin"},
		{OpRead | OpWrite | OpAdmin, "read,write,admin"},
		{OpRead | 8, "read"},
	} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("Op(%d).String() = %q, want %q", uint8(tc.op), got, tc.want)
		}
	}
	for _, op := range allOpsSets {
		if back, err := ParseOps(op.String()); err != nil || back != op {
			t.Errorf("ParseOps(%q) = %v, %v; want %d", op.String(), back, err, uint8(op))
		}
	}
}
