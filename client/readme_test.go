// This file holds the README's Go program, run as the package's first
// example against the shared in-process cell, and a test that the README
// shows exactly this function: the program a newcomer copies is one that
// runs in every `go test`.
package client_test

import (
	"context"
	"fmt"
	"go/format"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parosdb/paros/client"
)

// run appends two records to the journal named name, then reads them back.
func run(ctx context.Context, name string) error {
	c, err := client.FromEnv(ctx) // the cell paros dev describes in parosctl.env
	if err != nil {
		return err
	}
	defer c.Close()
	j, err := c.JournalNamed(ctx, name) // "demo", "shop/orders", or a hex id
	if err != nil {
		return err
	}
	w := j.NewWriter() // its first append claims the journal: one owner at a time
	defer w.Close()
	seq, err := w.Append(ctx, []byte("hello"), []byte("world"))
	if err != nil {
		return err // errors.Is(err, client.ErrAmbiguous): the records may still land
	}
	recs, err := j.NewReader(seq).Next(ctx) // a *client.GapError if truncated meanwhile
	for _, rec := range recs {
		fmt.Println(rec.Seq, string(rec.Data))
	}
	return err
}

// The README's program: connect from the environment, append as the
// journal's one writer, read back.
func Example() {
	id := exampleCell()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := run(ctx, id.String()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1 hello
	// 2 world
}

func TestTheReadmeShowsTheProgramTheExampleRuns(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "// run appends")
	end := strings.Index(string(src), "\n}\n") + len("\n}\n")
	fn, err := format.Source(src[start:end])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```go\n"+string(fn)+"```") {
		t.Fatalf("README.md does not show the program of client/readme_test.go verbatim in a go block:\n%s", fn)
	}
	if n := strings.Count(string(fn), "\n"); n > 25 {
		t.Fatalf("the README's program is %d lines, more than 25", n)
	}
}
