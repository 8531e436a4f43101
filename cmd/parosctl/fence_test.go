// This file checks the rule by which parosctl write picks its writer
// fence, against a real cell: a journal never claimed is claimed and the
// fence remembered; an application's Writer holding the fence makes a
// plain write refuse (exit 3, naming --take-over and --fence) and change
// nothing; --fence writes with a given fence; --take-over claims a fresh
// one, after which the application's Writer is superseded; and a
// multi-writer journal takes writes with no fence at all.
package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
)

func TestWriteNeverTakesAFenceItDidNotClaim(t *testing.T) {
	x := startCell(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	x.must("journal", "create", "app")
	cl, err := client.Dial(ctx, x.cell.Addrs(), x.cell.ClientOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	j, err := cl.JournalNamed(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}

	// Arrange: the application's writer holds the fence.
	app := j.NewWriter()
	defer app.Close()
	if err := app.Claim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Append(ctx, []byte("from the app")); err != nil {
		t.Fatal(err)
	}

	// Act and check: a plain write refuses and writes nothing.
	out, errs, code := x.run("", "write", "app", "from parosctl")
	if code != exitRefused || !strings.Contains(errs, "--take-over") || !strings.Contains(errs, "--fence") {
		t.Fatalf("write over the app's fence: exit %d: %s%s; want 3 naming --take-over and --fence", code, out, errs)
	}
	if _, err := app.Append(ctx, []byte("still the app")); err != nil {
		t.Fatalf("the app's writer after a refused parosctl write: %v", err)
	}

	// --fence writes with the fence given (here the app's own).
	fence := formatUUID(app.Fence())
	w := jsonOf[writeOut](x, "", "write", "app", "with the app's fence", "--fence", fence)
	if w.Claimed || w.Fence != fence || w.Batches[0].Seq != 3 {
		t.Fatalf("write --fence: %+v", w)
	}

	// --take-over claims a fresh fence: the app's writer is superseded, and
	// later plain writes reuse the fence parosctl claimed.
	w = jsonOf[writeOut](x, "", "write", "app", "taken over", "--take-over")
	if !w.Claimed || w.Fence == fence || w.Batches[0].Seq != 4 {
		t.Fatalf("write --take-over: %+v", w)
	}
	if _, err := app.Append(ctx, []byte("superseded")); !errors.Is(err, client.ErrSuperseded) {
		t.Fatalf("the app's writer after a take-over: %v, want ErrSuperseded", err)
	}
	if again := jsonOf[writeOut](x, "", "write", "app", "mine now"); again.Claimed || again.Fence != w.Fence || again.Batches[0].Seq != 5 {
		t.Fatalf("a plain write after the take-over: %+v, want fence %s", again, w.Fence)
	}

	// Another user (another fence book) is refused in turn.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, errs, code := x.run("", "write", "app", "someone else"); code != exitRefused || !strings.Contains(errs, "held by someone else") {
		t.Fatalf("another user's write: exit %d: %s", code, errs)
	}
	if _, _, code := x.run("", "write", "app", "x", "--fence", fence, "--take-over"); code != exitBadArgs {
		t.Fatalf("--fence with --take-over: exit %d, want 2", code)
	}

	// A multi-writer journal has no fence to take.
	x.must("journal", "create", "multi", "--writer", "multi")
	for range 2 {
		if w := jsonOf[writeOut](x, "", "write", "multi", "m"); w.Fence != "none" || w.Claimed || w.Batches[0].Outcome != "accepted" {
			t.Fatalf("write to a multi-writer journal: %+v", w)
		}
	}
	if r := jsonOf[readOut](x, "", "read", "multi"); len(r.Records) != 2 {
		t.Fatalf("read of the multi-writer journal: %+v", r)
	}
}
