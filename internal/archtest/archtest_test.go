// This file checks the module's layering rules (see doc.go) by
// parsing source, not by building it. walkModule walks the module from the
// directory holding go.mod, parses every non-test .go file with go/parser and
// runs check over each file's imports and statements.
//
// Three tests keep the checker honest. TestCheckCatches feeds check
// in-memory snippets, at least one per rule, so that every rule is seen to
// fire and clean code is seen to pass. TestWalkModule builds a small module in
// a temporary directory to show which files the walk reads and which it skips.
// TestModule runs the rules over this module and requires that core/quorum
// and core/journal were seen, so it cannot pass by scanning nothing.
package archtest

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Rule names, printed with every violation. Frozen: CI logs and reviewers
// grep for them.
const (
	ruleCoreStdlibOnly  = "core-stdlib-only"
	ruleDeterministic   = "core-host-deterministic"
	ruleNoGoroutines    = "core-host-no-goroutines"
	ruleHostLayering    = "host-layering"
	ruleSimNoRuntime    = "sim-no-runtime"
	ruleMeshIndependent = "mesh-independent"
	rulePlaySansIO      = "play-sans-io"
)

// allRules lists every rule; TestCheckCatches requires a case for each.
var allRules = []string{
	ruleCoreStdlibOnly,
	ruleDeterministic,
	ruleNoGoroutines,
	ruleHostLayering,
	ruleSimNoRuntime,
	ruleMeshIndependent,
	rulePlaySansIO,
}

// coreStdlib is the allowlist of standard-library packages core/ may import:
// pure computation, no clock, no randomness, no I/O, no concurrency.
var coreStdlib = map[string]bool{
	"errors":          true,
	"fmt":             true,
	"sort":            true,
	"slices":          true,
	"maps":            true,
	"bytes":           true,
	"strings":         true,
	"strconv":         true,
	"math":            true,
	"math/bits":       true,
	"encoding/binary": true,
	"hash":            true,
	"hash/crc32":      true,
	"hash/fnv":        true,
	"unicode/utf8":    true,
	"cmp":             true,
	"iter":            true,
	"container/heap":  true,
	"container/list":  true,
}

// nondeterministic lists the standard-library packages core/ and host/ may
// not import: a clock, a global random source, the operating system, the
// network, shared-memory concurrency, the scheduler, raw memory. An entry
// ending in "/..." forbids every package below its prefix (os/exec,
// net/http, sync/atomic, runtime/debug).
var nondeterministic = []string{
	"time",
	"math/rand", "math/rand/...",
	"os", "os/...",
	"net", "net/...",
	"sync", "sync/...",
	"runtime", "runtime/...",
	"unsafe",
}

// violation is one broken rule at one place in one file.
type violation struct {
	pos    token.Position
	what   string // the import path, or "go statement"
	rule   string
	reason string
}

func (v violation) String() string {
	return fmt.Sprintf("%s: %s: rule %s: %s", v.pos, v.what, v.rule, v.reason)
}

// within reports whether the slash-separated module-relative directory dir
// is top or lies below it.
func within(dir, top string) bool {
	return dir == top || strings.HasPrefix(dir, top+"/")
}

// modulePkg reports whether import path p names this module's package sub or
// a package below it. "…/corex" is not below "…/core".
func modulePkg(p, modPath, sub string) bool {
	return within(p, modPath+"/"+sub)
}

// isNondeterministic reports whether p matches an entry of nondeterministic.
func isNondeterministic(p string) bool {
	for _, entry := range nondeterministic {
		if prefix, ok := strings.CutSuffix(entry, "/..."); ok {
			if strings.HasPrefix(p, prefix+"/") {
				return true
			}
		} else if p == entry {
			return true
		}
	}
	return false
}

// check returns every rule that file f, in the module-relative package
// directory dir (slash-separated, e.g. "core/paxos"), breaks. modPath is the
// module path from go.mod.
func check(modPath, dir string, fset *token.FileSet, f *ast.File) []violation {
	inCore := within(dir, "core")
	inHost := within(dir, "host")
	// play/ is the game's world: a position must rebuild from its move log
	// alone, so it keeps the core's rules; play/web is its server.
	inPlay := within(dir, "play") && !within(dir, "play/web")
	var vs []violation
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			p = spec.Path.Value // a file that failed to parse; report it raw
		}
		add := func(rule, reason string) {
			vs = append(vs, violation{pos: fset.Position(spec.Pos()), what: strconv.Quote(p), rule: rule, reason: reason})
		}
		if inCore && !coreStdlib[p] && !modulePkg(p, modPath, "core") {
			add(ruleCoreStdlibOnly, "core/ imports only pure standard-library packages on the allowlist and core/ packages")
		}
		if (inCore || inHost) && isNondeterministic(p) {
			add(ruleDeterministic, "core/ and host/ are sans-IO: no clock, global randomness, OS, network, sync, runtime or unsafe")
		}
		if inHost && (modulePkg(p, modPath, "runtime") || modulePkg(p, modPath, "server") || modulePkg(p, modPath, "api")) {
			add(ruleHostLayering, "host/ never imports runtime/, server/ or api/")
		}
		if within(dir, "sim") && modulePkg(p, modPath, "runtime") {
			add(ruleSimNoRuntime, "sim/ replaces runtime/ and never imports it")
		}
		if inPlay && isNondeterministic(p) {
			add(rulePlaySansIO, "play/ rebuilds a position from its move log: no clock, global randomness, OS, network, sync, runtime or unsafe")
		}
		if within(dir, "mesh") && (modulePkg(p, modPath, "core") || modulePkg(p, modPath, "host") || modulePkg(p, modPath, "storage")) {
			add(ruleMeshIndependent, "mesh/ is independent of the Paxos packages (core/, host/, storage/)")
		}
	}
	if inCore || inHost || inPlay {
		ast.Inspect(f, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				vs = append(vs, violation{
					pos:    fset.Position(g.Pos()),
					what:   "go statement",
					rule:   ruleNoGoroutines,
					reason: "core/, host/ and play/ are single-threaded and start no goroutines",
				})
			}
			return true
		})
	}
	return vs
}

// walkResult is what walkModule saw.
type walkResult struct {
	files      map[string]int // module-relative package dir -> non-test .go files parsed
	violations []violation
	parseErrs  []error
}

// walkModule parses every non-test .go file of the module rooted at root and
// checks it. Directories that are not part of the module (testdata, vendor,
// names starting with "." or "_", nested modules) are skipped.
func walkModule(root, modPath string) (walkResult, error) {
	res := walkResult{files: map[string]int{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == root {
				return nil
			}
			name := d.Name()
			if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module is not this module
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			res.parseErrs = append(res.parseErrs, err)
		}
		if f == nil {
			return nil
		}
		dir := path.Dir(rel)
		res.files[dir]++
		res.violations = append(res.violations, check(modPath, dir, fset, f)...)
		return nil
	})
	return res, err
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod and returns it with the module path it declares.
func moduleRoot(t *testing.T) (root, modPath string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			modPath, err := parseModulePath(data)
			if err != nil {
				t.Fatalf("%s: %v", filepath.Join(dir, "go.mod"), err)
			}
			return dir, modPath
		}
		if !os.IsNotExist(err) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// parseModulePath returns the path of go.mod's module directive.
func parseModulePath(gomod []byte) (string, error) {
	for line := range bytes.Lines(gomod) {
		fields := strings.Fields(string(line))
		if len(fields) >= 2 && fields[0] == "module" {
			if p, err := strconv.Unquote(fields[1]); err == nil {
				return p, nil
			}
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("no module directive")
}

// TestModule enforces the rules on this module's source tree.
func TestModule(t *testing.T) {
	// Arrange.
	root, modPath := moduleRoot(t)

	// Act.
	res, err := walkModule(root, modPath)

	// Check.
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	for _, err := range res.parseErrs {
		t.Errorf("parse: %v", err)
	}
	for _, v := range res.violations {
		t.Errorf("%s", v)
	}
	for _, want := range []string{"core/quorum", "core/journal"} {
		if res.files[want] == 0 {
			t.Errorf("walk of %s found no source files in %s; is the walk broken?", root, want)
		}
	}
	total := 0
	for _, n := range res.files {
		total += n
	}
	t.Logf("checked %d files in %d packages of %s", total, len(res.files), modPath)
}

// TestCheckCatches proves every rule fires on a violation and stays quiet on
// code it allows, using in-memory snippets.
func TestCheckCatches(t *testing.T) {
	const mod = "github.com/parosdb/paros"
	cases := []struct {
		name string
		dir  string
		src  string
		want []string // rules broken, in report order
	}{
		{"core allowlist and core imports pass", "core/paxos",
			`package paxos
import (
	"cmp"; "container/heap"; "encoding/binary"; "errors"; "fmt"; "hash/crc32"; "iter"; "math/bits"; "slices"
	"github.com/parosdb/paros/core"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
)`, nil},
		{"core imports io", "core/paxos", `package paxos; import "io"`,
			[]string{ruleCoreStdlibOnly}},
		{"core imports context", "core/journal", `package journal; import "context"`,
			[]string{ruleCoreStdlibOnly}},
		{"core imports time", "core/paxos", `package paxos; import "time"`,
			[]string{ruleCoreStdlibOnly, ruleDeterministic}},
		{"core imports math/rand/v2", "core/quorum", `package quorum; import "math/rand/v2"`,
			[]string{ruleCoreStdlibOnly, ruleDeterministic}},
		{"core imports sync/atomic", "core/paxos", `package paxos; import "sync/atomic"`,
			[]string{ruleCoreStdlibOnly, ruleDeterministic}},
		{"core root imports os", "core", `package core; import "os"`,
			[]string{ruleCoreStdlibOnly, ruleDeterministic}},
		{"core imports a third-party module", "core/paxos", `package paxos; import "github.com/cockroachdb/pebble/v2"`,
			[]string{ruleCoreStdlibOnly}},
		{"core imports storage", "core/paxos", `package paxos; import "github.com/parosdb/paros/storage"`,
			[]string{ruleCoreStdlibOnly}},
		{"core imports a look-alike of core", "core/paxos", `package paxos; import "github.com/parosdb/paros/corex"`,
			[]string{ruleCoreStdlibOnly}},
		{"core starts a goroutine", "core/paxos", `package paxos; func f() { go f() }`,
			[]string{ruleNoGoroutines}},
		{"host imports core, storage and pure stdlib", "host",
			`package host; import ("errors"; "io"; "github.com/parosdb/paros/core/paxos"; "github.com/parosdb/paros/storage")`, nil},
		{"host imports sync", "host", `package host; import "sync"`,
			[]string{ruleDeterministic}},
		{"host imports net/http", "host/boot", `package boot; import "net/http"`,
			[]string{ruleDeterministic}},
		{"host imports runtime", "host", `package host; import "runtime"`,
			[]string{ruleDeterministic}},
		{"host imports unsafe", "host", `package host; import "unsafe"`,
			[]string{ruleDeterministic}},
		{"host imports math/rand", "host", `package host; import "math/rand"`,
			[]string{ruleDeterministic}},
		{"host starts a goroutine in a closure", "host",
			`package host; func f() { g := func() { go func() {}() }; g() }`,
			[]string{ruleNoGoroutines}},
		{"host imports module runtime", "host", `package host; import "github.com/parosdb/paros/runtime"`,
			[]string{ruleHostLayering}},
		{"host imports server", "host", `package host; import "github.com/parosdb/paros/server"`,
			[]string{ruleHostLayering}},
		{"host imports generated api", "host", `package host; import "github.com/parosdb/paros/api/parospb"`,
			[]string{ruleHostLayering}},
		{"sim imports host, core, time and os", "sim/world",
			`package world; import ("os"; "time"; "github.com/parosdb/paros/host"; "github.com/parosdb/paros/core/paxos")`, nil},
		{"sim imports runtime", "sim", `package sim; import "github.com/parosdb/paros/runtime"`,
			[]string{ruleSimNoRuntime}},
		{"mesh imports stdlib", "mesh", `package mesh; import ("crypto/ed25519"; "sync"; "time")`, nil},
		{"mesh imports core", "mesh", `package mesh; import "github.com/parosdb/paros/core/journal"`,
			[]string{ruleMeshIndependent}},
		{"mesh imports host", "mesh", `package mesh; import "github.com/parosdb/paros/host"`,
			[]string{ruleMeshIndependent}},
		{"mesh imports storage", "mesh/gossip", `package gossip; import "github.com/parosdb/paros/storage/memstore"`,
			[]string{ruleMeshIndependent}},
		{"storage imports core, sync and os", "storage/memstore",
			`package memstore; import ("os"; "sync"; "github.com/parosdb/paros/core/journal")`, nil},
		{"play imports time", "play", `package play; import "time"`,
			[]string{rulePlaySansIO}},
		{"play starts a goroutine", "play", `package play; func f() { go f() }`,
			[]string{ruleNoGoroutines}},
		{"play's server may serve", "play/web", `package web; import ("net/http"; "time")`, nil},
		{"runtime may do everything", "runtime",
			`package runtime; import ("net"; "os"; "sync"; "time"); func f() { go f() }`, nil},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Arrange.
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tc.dir+"/x.go", tc.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("snippet does not parse: %v", err)
			}

			// Act.
			vs := check(mod, tc.dir, fset, f)

			// Check.
			var got []string
			for _, v := range vs {
				got = append(got, v.rule)
				seen[v.rule] = true
				if v.pos.Filename != tc.dir+"/x.go" || v.pos.Line == 0 || v.what == "" || v.reason == "" {
					t.Errorf("violation lacks its place or subject: %+v", v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rules broken = %q, want %q; violations: %v", got, tc.want, vs)
			}
		})
	}
	for _, rule := range allRules {
		if !seen[rule] {
			t.Errorf("no case makes rule %s fire", rule)
		}
	}
}

// TestWalkModule shows which files the walk reads: non-test .go files of the
// module, every build tag alike; and which it skips: test files, testdata,
// hidden directories and nested modules. Missing host/ and sim/ are fine.
func TestWalkModule(t *testing.T) {
	// Arrange.
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                      "module example.com/m\n\ngo 1.26\n",
		"core/a/a.go":                 `package a; import "time"`,
		"core/a/inv.go":               "//go:build invariants\n\npackage a\n\nfunc f() { go f() }\n",
		"core/a/a_test.go":            `package a; import "os"`,
		"core/a/testdata/x.go":        `package x; import "net"`,
		"core/.hidden/h.go":           `package h; import "net"`,
		"core/nested/go.mod":          "module example.com/nested\n",
		"core/nested/n.go":            `package nested; import "os"`,
		"storage/s/s.go":              `package s; import ("sync"; "example.com/m/core/a")`,
		"mesh/m.go":                   `package mesh; import "example.com/m/storage/s"`,
		"cmd/tool/main.go":            `package main; import ("os"; "example.com/m/core/a")`,
		"core/b/README.md":            "not Go",
		"core/b/b.go":                 `package b; import "example.com/m/core/a"`,
		"internal/archtest/doc.go":    `package archtest`,
		"core/a/zz_generated_test.go": `package a; import "net"`,
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Act.
	res, err := walkModule(root, "example.com/m")

	// Check.
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range res.parseErrs {
		t.Errorf("parse: %v", err)
	}
	wantFiles := map[string]int{"core/a": 2, "core/b": 1, "storage/s": 1, "mesh": 1, "cmd/tool": 1, "internal/archtest": 1}
	if !maps.Equal(res.files, wantFiles) {
		t.Errorf("files walked = %v, want %v", res.files, wantFiles)
	}
	var got []string
	for _, v := range res.violations {
		got = append(got, v.pos.Filename+" "+v.rule)
	}
	slices.Sort(got)
	want := []string{
		"core/a/a.go " + ruleCoreStdlibOnly,
		"core/a/a.go " + ruleDeterministic,
		"core/a/inv.go " + ruleNoGoroutines,
		"mesh/m.go " + ruleMeshIndependent,
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("violations = %q, want %q", got, want)
	}
}
