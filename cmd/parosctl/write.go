package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// write appends records: from argv, from standard input (-) or from a
// file (--file), one record per line, or the whole input as one record
// (--raw). Records past what one call carries go as several batches, one
// after the other. The fence is chosen by writerFence (fence.go).

const writeLong = `Append records to JOURNAL. The records are the arguments after JOURNAL; or,
with '-' as the only one, standard input; or, with --file F, the file F. Input
is newline-delimited: each line is a record (a final newline ends the last
one; a '\r' before a newline is dropped). With --raw the whole input is one
record, byte for byte: the way to write binary data (--file F --raw, or
'- --raw'). Records past what one call carries (1024 records, 1 MiB) are
sent as several batches, in order, each at the tail the previous one left.

A single-writer journal takes writes fenced by its writer fence (a 128-bit
uuid). write never takes the fence from someone else unless told to:

  --fence U     write with fence U, as given (refused if U is not in force);
  --take-over   claim a fresh fence first, whoever holds the fence now
                (that writer's next write is refused);
  neither       if the journal was never claimed, claim a fresh fence; if
                the fence in force is one this user's parosctl claimed
                (write, claim), use it; else refuse (exit 3): who holds it
                is unknown.

The fences parosctl claimed are remembered in the fence book,
$XDG_CACHE_HOME/paros/fences.json (os.UserCacheDir; mode 0600), by cell and
journal. A multi-writer journal has no fence: write appends at its tail
(client.Appender) and --fence, --take-over and --seq do not apply.

It prints one verdict line per batch: the outcome, where the batch landed
and the journal's state after it (fence=U next_seq=N first_seq=F).
Exit codes: 0 every batch accepted (or a duplicate of one that landed);
1 no server reachable; 2 bad arguments; 3 refused (a fence someone else
holds, a superseded fence, the credentials); 4 ambiguous (a batch may have
landed: run the same write with --fence and --seq as printed to resend it).`

func writeCmd(g *globals) *cobra.Command {
	var fenceFlag, file string
	var seq uint64
	var takeOver, raw bool
	cmd := &cobra.Command{
		Use:   "write JOURNAL [RECORD... | -]",
		Short: "append records (from arguments, stdin or --file) under this user's writer fence",
		Long:  writeLong,
		Example: `  parosctl write demo hello world
  printf 'one\ntwo\n' | parosctl write demo -
  parosctl write demo --file events.txt
  parosctl write demo --file image.png --raw
  parosctl write demo again --take-over`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			recs, err := g.records(args[1:], file, raw)
			if err != nil {
				return err
			}
			batches, err := batch(recs)
			if err != nil {
				return err
			}
			flag, err := parseUUID(fenceFlag)
			if err != nil {
				return err
			}
			if takeOver && flag.IsSet() {
				return fail(exitBadArgs, "--take-over claims a fresh fence: drop it or --fence")
			}
			id, err := parseJournal(args[0])
			if err != nil {
				return err
			}
			return g.withClient(func(c *client.Client) error {
				j := c.Journal(id)
				fc, err := g.writerFence(c, j, flag, takeOver, journal.Seq(seq))
				if err != nil {
					return err
				}
				return g.send(j, fc, batches)
			})
		},
	}
	cmd.Flags().StringVar(&fenceFlag, "fence", "", "write with this writer fence (32 hex digits), as given")
	cmd.Flags().BoolVar(&takeOver, "take-over", false, "claim a fresh fence first, from whoever holds it")
	cmd.Flags().Uint64Var(&seq, "seq", 0, "position the first batch must land at (default: the tail)")
	cmd.Flags().StringVar(&file, "file", "", "read the records from this file, one per line")
	cmd.Flags().BoolVar(&raw, "raw", false, "the whole input (--file or -) is one record, byte for byte")
	return withSchema(cmd, writeOut{}, false)
}

// records are the records to write: args, or the input they name.
func (g *globals) records(args []string, file string, raw bool) ([][]byte, error) {
	var in []byte
	var err error
	switch {
	case file != "" && len(args) > 0:
		return nil, fail(exitBadArgs, "records come from --file or the arguments, not both")
	case file != "":
		if in, err = os.ReadFile(file); err != nil {
			return nil, fail(exitBadArgs, "--file: %v", err)
		}
	case len(args) == 1 && args[0] == "-":
		if in, err = io.ReadAll(io.LimitReader(g.in, writeInputMax+1)); err != nil {
			return nil, fail(exitBadArgs, "standard input: %v", err)
		}
		if len(in) > writeInputMax {
			return nil, fail(exitBadArgs, "standard input: more than %d bytes: write it in parts", writeInputMax)
		}
	case raw:
		return nil, fail(exitBadArgs, "--raw takes its record from --file or '-'")
	case len(args) == 0:
		return nil, fail(exitBadArgs, "no record: pass RECORD..., '-' for standard input, or --file F")
	default:
		recs := make([][]byte, len(args))
		for i, a := range args {
			recs[i] = []byte(a)
		}
		return recs, nil
	}
	if raw {
		return [][]byte{in}, nil
	}
	return splitLines(in)
}

// writeInputMax bounds the input one write reads (stdin or --file).
const writeInputMax = 256 << 20

// splitLines cuts newline-delimited input into records: each line one,
// the final newline ending the last, a '\r' before a newline dropped.
func splitLines(in []byte) ([][]byte, error) {
	if len(in) == 0 {
		return nil, fail(exitBadArgs, "no record: the input is empty")
	}
	lines := bytes.Split(bytes.TrimSuffix(in, []byte("\n")), []byte("\n"))
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte("\r"))
	}
	return lines, nil
}

// batch cuts records into the batches one Write carries, in order.
func batch(recs [][]byte) ([][][]byte, error) {
	var out [][][]byte
	var cur [][]byte
	size := 0
	for i, r := range recs {
		if len(r) > journal.WriteBytesMax {
			return nil, fail(exitBadArgs, "record %d: %d bytes, over the %d a write carries", i+1, len(r), journal.WriteBytesMax)
		}
		if len(cur) == journal.WriteRecordsMax || size+len(r) > journal.WriteBytesMax {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, r), size+len(r)
	}
	return append(out, cur), nil
}

// send writes the batches in order and prints each verdict; it stops at
// the first batch not accepted.
func (g *globals) send(j *client.Journal, fc fenceChoice, batches [][][]byte) error {
	out := writeOut{Journal: j.ID().String(), Fence: formatUUID(fc.fence), Claimed: fc.claimed, Batches: []verdictOut{}}
	var lines []string
	if fc.claimed {
		lines = append(lines, "claimed fence="+formatUUID(fc.fence))
	}
	if fc.multi {
		lines = append(lines, "multi-writer journal: no fence")
	}
	var a *client.Appender
	if fc.multi {
		a = j.NewAppender()
	}
	next := fc.next
	var stop error
	for _, recs := range batches {
		var v verdictOut
		var line string
		if fc.multi {
			v, line, stop = g.appendBatch(a, recs)
		} else {
			v, line, stop = g.writeBatch(j, fc.fence, next, recs)
			next += journal.Seq(v.Count)
		}
		if line != "" {
			out.Batches, lines = append(out.Batches, v), append(lines, line)
		}
		if stop != nil {
			break
		}
	}
	if len(out.Batches) > 0 || stop == nil {
		g.print(strings.Join(lines, "\n"), out)
	}
	return stop
}

// writeBatch sends one fenced write at seq and returns its verdict, its
// line, and the error that stops the write (nil when it was accepted).
func (g *globals) writeBatch(j *client.Journal, fence journal.LeaderUUID, seq journal.Seq, recs [][]byte) (verdictOut, string, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	r, err := j.Write(ctx, journal.WriteRequest{Journal: j.ID(), Leader: fence, Seq: seq, Records: recs})
	line, code, err := settle(j.ID(), r, err)
	if err != nil {
		return verdictOut{}, "", err
	}
	return verdictOf(r), line, exitWith(code, line)
}

// appendBatch appends one batch to a multi-writer journal.
func (g *globals) appendBatch(a *client.Appender, recs [][]byte) (verdictOut, string, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	seq, err := a.Append(ctx, recs...)
	switch {
	case errors.Is(err, client.ErrAmbiguous):
		return verdictOut{Outcome: "none", Ambiguous: true}, "ambiguous: the append may have landed (resending it may append it twice)",
			exitError{exitAmbiguous, err}
	case errors.Is(err, client.ErrWrongMode):
		return verdictOut{}, "", fail(exitRefused, "%v", err)
	case errors.Is(err, client.ErrNotLeader), errors.Is(err, client.ErrBusy), errors.Is(err, client.ErrTooLarge):
		return verdictOut{}, "", fail(exitRefused, "%v (nothing was proposed)", err)
	case err != nil:
		return verdictOut{}, "", callError(err)
	}
	v := verdictOut{Outcome: "accepted", Seq: uint64(seq), Count: uint64(len(recs))}
	return v, fmt.Sprintf("accepted seq=%d count=%d", seq, len(recs)), nil
}
