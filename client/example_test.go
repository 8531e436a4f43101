// This file holds the package's testable examples. Each runs against a
// fresh journal of the shared in-process cell that network_test.go starts
// (three machines, gRPC on 127.0.0.1), so its Output is checked like any
// test; exampleCell stands in for a real cell's addresses. ExampleAppender
// only compiles: test cells have no multi-writer journal.
package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/parosdb/paros/client"
)

// exampleCell describes a running cell in the environment FromEnv reads,
// as `paros dev`'s parosctl.env does, and returns a journal of it that
// nothing else writes: here, the shared in-process test cell (plaintext).
func exampleCell() client.JournalID {
	c, id, err := sharedJournal()
	if err != nil {
		log.Fatal(err)
	}
	os.Setenv(client.EnvServers, strings.Join(c.Addrs(), ","))
	os.Setenv(client.EnvInsecure, "1")
	return id
}

// A Writer owns a single-writer journal: its first Append claims the
// journal (a fresh fence that refuses every earlier writer), and each
// Append returns the position of its first record.
func ExampleWriter() {
	id := exampleCell()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	c, err := client.FromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := c.Journal(id).NewWriter()
	defer w.Close()

	seq, err := w.Append(ctx, []byte("hello"), []byte("world"))
	if err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrAmbiguous): the records may still land
	}
	fmt.Println("appended at", seq, "next", w.NextSeq())
	// Output: appended at 1 next 3
}

// AppendAsync queues an append and returns at once; appends in flight
// together share writes. Flush waits for all of them.
func ExampleWriter_AppendAsync() {
	id := exampleCell()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.FromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := c.Journal(id).NewWriter()
	defer w.Close()

	var ops []*client.AppendOp
	for i := range 100 {
		op, err := w.AppendAsync(ctx, fmt.Appendf(nil, "event %d", i))
		if err != nil {
			log.Fatal(err)
		}
		ops = append(ops, op)
	}
	if err := w.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	last, err := ops[99].Wait(ctx)
	fmt.Println("the last append is at", last, err)
	fmt.Println("appends written:", w.Stats().Appends)
	// Output:
	// the last append is at 100 <nil>
	// appends written: 100
}

// A Reader follows a journal; Records iterates over it and reports a
// truncated range as a *GapError before the records after it.
func ExampleReader_Records() {
	id := exampleCell()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.FromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	j := c.Journal(id)
	w := j.NewWriter()
	defer w.Close()
	if _, err := w.Append(ctx, []byte("a"), []byte("b"), []byte("c"), []byte("d"), []byte("e")); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Truncate(ctx, 3); err != nil { // drop positions 1 and 2
		log.Fatal(err)
	}

	r := j.NewReader(1)
	for rec, err := range r.Records(ctx) {
		var gap *client.GapError
		switch {
		case errors.As(err, &gap):
			fmt.Printf("gap [%d, %d)\n", gap.From, gap.To)
			continue
		case err != nil:
			log.Fatal(err)
		}
		fmt.Println(rec.Seq, string(rec.Data))
		if rec.Seq == 5 {
			break // Records follows the tail until ctx ends or the loop breaks
		}
	}
	// Output:
	// gap [1, 3)
	// 3 c
	// 4 d
	// 5 e
}

// An Appender writes to a multi-writer journal, where the journal places
// each write at its tail. A write whose answer was lost is ErrAmbiguous:
// resending it may append it twice.
func ExampleAppender() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.FromEnv(ctx)
	if err != nil {
		log.Fatal(err) // client.ErrNoServer: no server answered
	}
	defer c.Close()
	j, err := c.JournalNamed(ctx, "shop/clicks") // a journal created with admin.WithMultiWriter()
	if err != nil {
		log.Fatal(err)
	}

	a := j.NewAppender()
	seq, err := a.Append(ctx, []byte("click"))
	switch {
	case errors.Is(err, client.ErrAmbiguous):
		log.Print("the click may or may not be in the journal")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("the click is at", seq)
	}
}
