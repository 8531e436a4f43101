// This file holds what the package's tests and examples share: journals of
// shared in-process cells (internal/testcell: three real machines over
// gRPC on 127.0.0.1, one journal per test), and helpers that dial a
// client.Client with its admin.Client, append records and read them back.
package admin_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

// shared is the package's shared cells.
var shared testcell.Pool

func TestMain(m *testing.M) {
	code := m.Run()
	_ = shared.Close()
	os.Exit(code)
}

// cellJournal returns a shared cell and a journal no other test or
// example uses, once it has a leader; it skips under -short.
func cellJournal(t *testing.T) (*testcell.Cell, journal.ID) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-machine cell")
	}
	c, id, err := shared.Journal()
	if err != nil {
		t.Fatal(err)
	}
	return c, id
}

// dial returns a plaintext client.Client of addrs, closed when the test
// ends, and its admin.Client.
func dial(t *testing.T, addrs ...string) (*client.Client, *admin.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addrs, client.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, admin.New(c)
}

// dialClient is dial's client.Client alone.
func dialClient(t *testing.T, addrs ...string) *client.Client {
	t.Helper()
	c, _ := dial(t, addrs...)
	return c
}

// testCtx bounds one test. The operator's tests start cells of their own
// and catch new replicas and proxies up; under -race on a two-core runner
// with other packages testing beside them that has taken over 20 s, so
// the bound is a minute. Each test's own deadlines for what it checks
// (a removed replica unserved within 5 s, say) are kept.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// seeded is a Writer option drawing claim uuids from seed, so that runs
// repeat.
func seeded(seed uint64) client.WriterOption { return client.WithUUIDs(sansio.SeededUUIDs(seed)) }

// hex is the member form of node id n, as a Configuration names it.
func hex(n admin.NodeID) string { return n.String() }
