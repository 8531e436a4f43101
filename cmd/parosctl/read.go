package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// The reading commands, read and tail: a client.Reader from --from, one
// page per call. A truncated range is printed as a gap line, never
// skipped silently.

func readCmd(g *globals) *cobra.Command {
	var from uint64
	var limit, wait uint32
	cmd := &cobra.Command{
		Use:   "read JOURNAL",
		Short: "read records from a position (a truncated range is reported as a gap)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, id, err := g.dialJournal(args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			r := c.Journal(id).NewReader(journal.Seq(from), client.WithPageLimit(int(limit)),
				client.WithTailWait(time.Duration(wait)*time.Millisecond))
			_, gap, err := g.readPage(r)
			if err == nil && gap {
				// After the gap line, the page where the journal resumes.
				_, _, err = g.readPage(r)
			}
			return err
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "records at most (0: the server's page)")
	cmd.Flags().Uint32Var(&wait, "wait-ms", 0, "long-poll the tail up to this long")
	return cmd
}

// readPage prints the reader's next page, or the gap a truncation left,
// and returns how many records it printed and whether it was a gap.
func (g *globals) readPage(r *client.Reader) (int, bool, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	recs, err := r.Next(ctx)
	var gap *client.GapError
	switch {
	case errors.As(err, &gap):
		g.print(fmt.Sprintf("gap: positions [%d, %d) were truncated; resuming at %d", gap.From, gap.To, gap.To),
			map[string]any{"gap_from": gap.From, "resumed_at": gap.To})
		return 0, true, nil
	case err != nil:
		return 0, false, callError(err)
	}
	for _, rec := range recs {
		g.print(fmt.Sprintf("%d\t%s", rec.Seq, rec.Data), map[string]any{"seq": rec.Seq, "record": string(rec.Data)})
	}
	return len(recs), false, nil
}

// tailWait is how long tail long-polls the tail for each page.
const tailWait = time.Second

func tailCmd(g *globals) *cobra.Command {
	var from uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail JOURNAL",
		Short: "read to the tail; with -f keep following it",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, id, err := g.dialJournal(args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			r := c.Journal(id).NewReader(journal.Seq(from), client.WithTailWait(tailWait))
			for {
				n, gap, err := g.readPage(r)
				if err != nil {
					return err
				}
				if n == 0 && !gap && !follow {
					return nil // the tail, and nothing new within the wait
				}
			}
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following the tail")
	return cmd
}

// dialJournal parses a journal argument and dials the cell.
func (g *globals) dialJournal(arg string) (*client.Client, journal.ID, error) {
	id, err := parseJournal(arg)
	if err != nil {
		return nil, journal.ID{}, err
	}
	c, err := g.dial()
	if err != nil {
		return nil, journal.ID{}, err
	}
	return c, id, nil
}
