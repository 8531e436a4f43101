// This file checks a secure test cell (Options.Secure) the way a client
// meets it: the cell forms over mutual TLS with its admin token; a client
// with the cell's CA and the token claims the journal, appends and reads
// back; a client with the CA but no token is refused Unauthenticated (at
// Dial, whose node-only Inspect needs an authenticated caller) and the
// error wraps client.ErrDenied; a plaintext client reaches no server; and
// a token on the default (plaintext) transport is refused by Dial itself.
package testcell_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/internal/testcell"
)

func TestSecureCellAdmitsTheTokenAndRefusesNoToken(t *testing.T) {
	// Arrange: a secure cell, formed.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Secure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	id := cell.Journals[0]
	for i, n := range cell.Nodes {
		if n.TLS == nil || cell.Machine(i).NodeID() != n.TLS.NodeID {
			t.Fatalf("machine %d does not run under its certificate's node id", i+1)
		}
	}

	// Act and check: the CA and the admin token get in, end to end.
	c, err := client.Dial(ctx, cell.Addrs(), cell.ClientOptions()...)
	if err != nil {
		t.Fatalf("dial with the CA and the token: %v", err)
	}
	defer c.Close()
	w := c.Journal(id).NewWriter()
	defer w.Close()
	if err := w.Claim(ctx); err != nil {
		t.Fatalf("claim: %v", err)
	}
	seq, err := w.Append(ctx, []byte("secured"))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	recs, err := c.Journal(id).NewReader(seq).Next(ctx)
	if err != nil || len(recs) == 0 || string(recs[0].Data) != "secured" {
		t.Fatalf("read back: %v %v", recs, err)
	}

	// The CA without a token: refused, not retried until the deadline.
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	anon, err := client.Dial(dctx, cell.Addrs(), client.WithCAFile(cell.CAFile))
	if err == nil {
		defer anon.Close()
		_, err = anon.Journal(id).Write(dctx, journal.WriteRequest{Seq: seq + 1, Records: [][]byte{[]byte("anonymous")}})
	}
	if status.Code(err) != codes.Unauthenticated || !errors.Is(err, client.ErrDenied) {
		t.Fatalf("a client without a token got %v, want Unauthenticated wrapping client.ErrDenied", err)
	}
	if dctx.Err() != nil {
		t.Fatal("the refusal took until the deadline: it must end the call at once")
	}

	// Plaintext reaches no server of a TLS cell.
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	defer pcancel()
	if _, err := client.Dial(pctx, cell.Addrs(), client.WithInsecure()); !errors.Is(err, client.ErrNoServer) {
		t.Fatalf("a plaintext client got %v, want ErrNoServer", err)
	}
	// A Client that chose no transport at all is refused before it dials.
	if _, err := client.Dial(ctx, cell.Addrs()); !errors.Is(err, client.ErrNoTransport) {
		t.Fatalf("a client with no transport chosen got %v, want ErrNoTransport", err)
	}

	// A token is never sent in the clear by default: Dial refuses.
	if _, err := client.Dial(ctx, cell.Addrs(), client.WithToken(cell.Token)); err == nil || errors.Is(err, client.ErrNoServer) {
		t.Fatalf("a token over the default plaintext transport: %v, want Dial to refuse the options", err)
	}
}
