package blackbox

import (
	"context"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/core/journal"
)

// inspect is every server's facts about journal id, through the
// operator's Inspect (client/admin) over c: the tests' one look inside the
// cell through the library.
func inspect(ctx context.Context, c *client.Client, id journal.ID) []admin.MemberStatus {
	return admin.New(c).Inspect(ctx, id)
}
