package client_test

import (
	"errors"
	"testing"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// A reference whose tenant half is hex is an id; any other is a name, and
// a name is checked before a call is made.
func TestParseRefTellsIdsFromNames(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		id   journal.ID
		name bool
		bad  bool
	}{
		{ref: "a/1b", id: journal.ID{Tenant: 0xa, Journal: 0x1b}},
		{ref: "id:a/1b", id: journal.ID{Tenant: 0xa, Journal: 0x1b}},
		{ref: "000000000000000a/000000000000001b", id: journal.ID{Tenant: 0xa, Journal: 0x1b}},
		{ref: "a/orders", bad: true}, // a hex tenant half is an id, and "orders" is no hex
		{ref: "shop/orders", name: true},
		{ref: "orders", name: true},
		{ref: "demo", name: true},
	} {
		id, name, err := client.ParseRef(tc.ref)
		if (err != nil) != tc.bad || name != tc.name || (!tc.bad && !name && id != tc.id) {
			t.Errorf("ParseRef(%q) = %s, %v, %v; want %s, name %v, bad %v", tc.ref, id, name, err, tc.id, tc.name, tc.bad)
		}
	}
	for ref, ok := range map[string]bool{
		"orders": true, "shop/orders": true, "shop/": false, "/orders": false, "shop/a/b": false,
		"cafe/orders": false, "shop/0123456789abcdef": false, "shop/\x01": false, "shop/\xff": false,
	} {
		if err := client.CheckName(ref); (err == nil) != ok || (err != nil && !errors.Is(err, client.ErrBadName)) {
			t.Errorf("CheckName(%q) = %v, want ok %v (and ErrBadName when not)", ref, err, ok)
		}
	}
}
