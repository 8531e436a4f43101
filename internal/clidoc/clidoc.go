// Package clidoc renders a command-line reference from a cobra command
// tree, in Markdown: for each visible command its usage, short and long
// help, examples and flags, depth first in the order the tree holds them.
// The long help is copied verbatim (in a text block), so a JSON schema
// a command appends to it with Schema is part of the reference.
//
// It is the generator behind docs/reference/cli.md (parosctl) and
// docs/reference/paros.md (paros): each binary has a hidden `docs` command
// that prints Markdown(root), and a test that regenerates the file in
// memory and fails when the committed one differs. It replaces
// github.com/spf13/cobra/doc, which would bring in a Markdown-to-man
// dependency the module does not otherwise need.
package clidoc

import (
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Markdown renders the reference of root's tree: a title, intro (free
// Markdown), a table of contents, then one section per visible command.
// refresh is the command that regenerates the file, named in its header.
func Markdown(root *cobra.Command, intro, refresh string) string {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var cmds []*cobra.Command
	walk(root, func(c *cobra.Command) { cmds = append(cmds, c) })
	var b strings.Builder
	fmt.Fprintf(&b, "# %s command reference\n\n", root.Name())
	fmt.Fprintf(&b, "<!-- Generated from the command tree by `%s`: do not edit by hand. -->\n\n", refresh)
	if intro != "" {
		b.WriteString(strings.TrimSpace(intro) + "\n\n")
	}
	b.WriteString("## Commands\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s- [`%s`](#%s): %s\n", strings.Repeat("  ", depth(c)), c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	for _, c := range cmds {
		section(&b, c)
	}
	return b.String()
}

// walk calls f on c and on every visible command under it, depth first.
func walk(c *cobra.Command, f func(*cobra.Command)) {
	if c.Hidden || c.Name() == "help" {
		return
	}
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

func depth(c *cobra.Command) int {
	d := 0
	for p := c.Parent(); p != nil; p = p.Parent() {
		d++
	}
	return d
}

// anchor is the GitHub heading anchor of a heading text.
func anchor(s string) string {
	return strings.ToLower(strings.ReplaceAll(s, " ", "-"))
}

func section(b *strings.Builder, c *cobra.Command) {
	fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
	if c.Short != "" {
		fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(c.Short))
	}
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	if c.Long != "" {
		fmt.Fprintf(b, "```text\n%s\n```\n\n", strings.TrimRight(c.Long, "\n "))
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("Subcommands:\n\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(b, "- [`%s`](#%s): %s\n", sub.CommandPath(), anchor(sub.CommandPath()), sub.Short)
			}
		}
		b.WriteString("\n")
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n\n", strings.TrimRight(c.Example, "\n "))
	}
	if fs := c.LocalNonPersistentFlags(); fs.HasAvailableFlags() {
		fmt.Fprintf(b, "Flags:\n\n```\n%s```\n\n", fs.FlagUsages())
	}
	if fs := c.PersistentFlags(); c.Parent() == nil && fs.HasAvailableFlags() {
		fmt.Fprintf(b, "Global flags (every command takes them):\n\n```\n%s```\n\n", fs.FlagUsages())
	}
}

// Schema renders the JSON a command prints with -o json, from the Go type
// it encodes (a struct, or a slice of structs): one line per field with
// its JSON name, its JSON type and the field's `doc` tag, nested objects
// indented under their field. lines says the output is one such value per
// line (JSON Lines) rather than one document.
func Schema(v any, lines bool) string {
	t := reflect.TypeOf(v)
	var b strings.Builder
	switch {
	case lines:
		b.WriteString("JSON output (-o json): one object per line (JSON Lines):\n\n")
	case t.Kind() == reflect.Slice:
		b.WriteString("JSON output (-o json): an array of objects:\n\n")
		t = t.Elem()
	default:
		b.WriteString("JSON output (-o json): one object:\n\n")
	}
	tw := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	bytes := fields(tw, t, 1)
	_ = tw.Flush()
	b.WriteString("\n? marks a field left out when it is empty or zero.")
	if bytes {
		b.WriteString(" A base64 field is bytes,\nbase64-encoded (standard alphabet, padded), as Go's encoding/json writes\n[]byte.")
	}
	return b.String()
}

// fields writes one line per field of t at indentation level, and reports
// whether any field (nested ones too) is base64.
func fields(tw *tabwriter.Writer, t reflect.Type, level int) bool {
	bytes := false
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			name += "?"
		}
		typ := typeName(f.Type)
		bytes = bytes || strings.Contains(typ, "base64")
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", strings.Repeat("  ", level), name, typ, f.Tag.Get("doc"))
		if inner := structOf(f.Type); inner != nil {
			bytes = fields(tw, inner, level+1) || bytes
		}
	}
	return bytes
}

// structOf is the struct type a field's value holds (through pointers and
// slices), or nil.
func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct {
		return t
	}
	return nil
}

// typeName is a Go type's JSON type: string, number, boolean, base64,
// object, or [T] for an array.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "base64"
		}
		return "[" + typeName(t.Elem()) + "]"
	case reflect.Struct:
		return "object"
	case reflect.Map:
		return "object"
	}
	return t.Kind().String()
}
