package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/parosdb/paros/internal/clidoc"
)

// The output formats of -o: text (lines for people), json (one Go type per
// command, its schema in the command's help), table (aligned columns with
// a header for the list commands; the same as text elsewhere).

// schemaKey is the annotation naming a command's JSON type.
const schemaKey = "parosctl/json-schema"

// schemaTypes are the JSON types of the commands, by the name in their
// schemaKey annotation (the schema tests decode each command's output
// into its type).
var schemaTypes = map[string]reflect.Type{}

// withSchema documents the JSON cmd prints with -o json: v's type (a
// struct, or a slice of structs), appended to its long help. lines says
// it prints one value per line (JSON Lines), as tail does.
func withSchema(cmd *cobra.Command, v any, lines bool) *cobra.Command {
	t := reflect.TypeOf(v)
	schemaTypes[t.String()] = t
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[schemaKey] = t.String()
	long := cmd.Long
	if long == "" {
		long = strings.ToUpper(cmd.Short[:1]) + cmd.Short[1:] + "."
	}
	cmd.Long = strings.TrimRight(long, "\n") + "\n\n" + clidoc.Schema(v, lines)
	return cmd
}

// print writes v as JSON with -o json, else the human text (text and
// table alike: the command's text is no list); empty text prints nothing.
func (g *globals) print(human string, v any) {
	switch {
	case g.output == "json":
		g.printJSON(v)
	case human != "":
		fmt.Fprintln(g.out, human)
	}
}

// printJSON writes v as one line of JSON.
func (g *globals) printJSON(v any) {
	enc := json.NewEncoder(g.out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// printList writes a list: v as JSON with -o json, rows under header in
// aligned columns with -o table, else the text lines.
func (g *globals) printList(lines []string, header []string, rows [][]string, v any) {
	switch g.output {
	case "json":
		g.printJSON(v)
	case "table":
		tw := tabwriter.NewWriter(g.out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		_ = tw.Flush()
	default:
		if len(lines) > 0 {
			fmt.Fprintln(g.out, strings.Join(lines, "\n"))
		}
	}
}

// recordText is a record as text prints it: as is when it is printable
// UTF-8 on one line, else Go-quoted ("\xff", "a\nb"), so that each record
// stays one line.
func recordText(b []byte) string {
	if utf8.Valid(b) && !strings.HasPrefix(string(b), `"`) &&
		strings.IndexFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return string(b)
	}
	return strconv.Quote(string(b))
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
