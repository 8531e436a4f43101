package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
)

// The reading commands, read and tail: a client.Reader from --from, one
// page per call. A truncated range is printed as a gap line, never
// skipped silently. The text output is already a table (SEQ, a tab, the
// record), so -o table prints the same.

const readLong = `Read one page of JOURNAL's records from --from (at most --limit, or the
server's page), and print one line per record: its position, a tab, the
record. A record that is not printable UTF-8 on one line is printed
Go-quoted ("\xff", "a\nb"); -o json carries the bytes exactly (base64). If
positions from --from on were truncated, it prints a gap line
("gap: positions [A, B) were truncated; resuming at B") and the page from B.
--wait long-polls the tail: with nothing past --from yet, the server waits
up to that long for a write (at most 1s a call).

-o table prints the same as text: the text is already a table.`

func readCmd(g *globals) *cobra.Command {
	var from uint64
	var limit uint32
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "read JOURNAL",
		Short: "read records from a position (a truncated range is reported as a gap)",
		Long:  readLong,
		Example: `  parosctl read demo
  parosctl read demo --from 3 --limit 10
  parosctl read demo --from 100 --wait 1s -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			c, id, err := g.dialJournal(args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			r := c.Journal(id).NewReader(journal.Seq(from), client.WithPageLimit(int(limit)), client.WithTailWait(wait))
			out := readOut{Journal: id.String(), Records: []recordOut{}}
			recs, gap, err := g.page(r)
			if err == nil && gap != nil {
				// After the gap, the page where the journal resumes.
				out.Gap = gap
				recs, _, err = g.page(r)
			}
			if err != nil {
				return err
			}
			out.Records, out.Next = recs, uint64(r.Cursor())
			g.print(readText(out), out)
			return nil
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "records at most (0: the server's page)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "long-poll the tail up to this long (e.g. 500ms, 1s)")
	return withSchema(cmd, readOut{}, false)
}

// readText is a read's text: the gap line, then one line per record.
func readText(out readOut) string {
	var lines []string
	if out.Gap != nil {
		lines = append(lines, gapText(out.Gap))
	}
	for _, r := range out.Records {
		lines = append(lines, fmt.Sprintf("%d\t%s", r.Seq, recordText(r.Data)))
	}
	return strings.Join(lines, "\n")
}

func gapText(gap *gapOut) string {
	return fmt.Sprintf("gap: positions [%d, %d) were truncated; resuming at %d", gap.From, gap.To, gap.To)
}

// page reads the reader's next page: its records, or the gap a truncation
// left.
func (g *globals) page(r *client.Reader) ([]recordOut, *gapOut, error) {
	ctx, cancel := g.ctx()
	defer cancel()
	recs, err := r.Next(ctx)
	var gap *client.GapError
	switch {
	case errors.As(err, &gap):
		return nil, &gapOut{From: uint64(gap.From), To: uint64(gap.To)}, nil
	case err != nil:
		return nil, nil, callError(err)
	}
	out := make([]recordOut, 0, len(recs))
	for _, rec := range recs {
		out = append(out, recordOut{Seq: uint64(rec.Seq), Data: rec.Data})
	}
	return out, nil, nil
}

// tailWait is how long tail long-polls the tail for each page.
const tailWait = time.Second

func tailCmd(g *globals) *cobra.Command {
	var from uint64
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail JOURNAL",
		Short: "read to the tail; with -f keep following it",
		Long: `Read JOURNAL from --from to its tail, page after page, printing each record
as read does (a truncated range as a gap line); with -f, keep following the
tail until interrupted. -o json prints one object per line as it goes.

-o table prints the same as text: the text is already a table.`,
		Example: `  parosctl tail demo
  parosctl tail -f demo --from 1
  parosctl tail -f demo -o json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: g.completeJournal,
		RunE: func(_ *cobra.Command, args []string) error {
			c, id, err := g.dialJournal(args[0])
			if err != nil {
				return err
			}
			defer c.Close()
			r := c.Journal(id).NewReader(journal.Seq(from), client.WithTailWait(tailWait))
			for {
				recs, gap, err := g.page(r)
				if err != nil {
					return err
				}
				if gap != nil {
					g.print(gapText(gap), tailLine{Gap: gap})
				}
				for _, rec := range recs {
					g.print(fmt.Sprintf("%d\t%s", rec.Seq, recordText(rec.Data)), tailLine{Seq: rec.Seq, Data: rec.Data})
				}
				if len(recs) == 0 && gap == nil && !follow {
					return nil // the tail, and nothing new within the wait
				}
			}
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 1, "first position")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep following the tail")
	return withSchema(cmd, tailLine{}, true)
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
