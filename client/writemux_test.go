package client_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parosdb/paros/internal/testcell"
	"github.com/parosdb/paros/server"
)

// Every Writer of one Client shares the Client's one WriteStream per
// server: 100 Writers of one Client, under one principal (the remote host,
// on a plaintext cell), claim and append to 100 journals at once, and the
// three servers see at most one stream open each. With a stream per
// Writer, the servers saw 100 opens and refused those past the
// principal's bound (server.WriteStreamsPerPrincipalMax, 64).
func TestEveryWriterOfAClientSharesOneStreamPerServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-machine cell")
	}
	const journals = 100
	if journals <= server.WriteStreamsPerPrincipalMax {
		t.Fatalf("the test needs more journals than a principal may hold streams (%d)", server.WriteStreamsPerPrincipalMax)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cell, err := testcell.Start(ctx, t.TempDir(), testcell.Options{Nodes: 3, Journals: journals})
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	c := dial(t, cell.Addrs()...)

	var wg sync.WaitGroup
	errs := make(chan error, journals)
	for _, id := range cell.Journals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := c.Journal(id).NewWriter()
			defer w.Close()
			if err := w.Claim(ctx); err != nil {
				errs <- fmt.Errorf("claim %s: %w", id, err)
				return
			}
			if _, err := w.Append(ctx, []byte("one")); err != nil {
				errs <- fmt.Errorf("append %s: %w", id, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	const method = "/paros.v1.Journal/WriteStream"
	opened := int64(0)
	for _, n := range cell.Nodes {
		opened += n.Calls(method)
	}
	if opened > int64(len(cell.Nodes)) {
		t.Fatalf("%d Writers of one Client opened %d WriteStreams over %d servers, want at most one per server", journals, opened, len(cell.Nodes))
	}
}
