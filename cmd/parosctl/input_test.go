// This file checks how write reads its records (arguments, standard input
// and --file, a line each or the whole input with --raw) and cuts them
// into batches within a write's limits, and the fence book: a fence
// remembered is found again by cell and journal, in a file of mode 0600
// rewritten with no temporary file left behind.
package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

func TestWriteReadsItsRecords(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "recs")
	binary := []byte{0xff, 0x00, '\n', 'x', '\r', '\n'}
	if err := os.WriteFile(file, binary, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		file  string
		raw   bool
		want  []string
	}{
		{"arguments", []string{"a", "b c"}, "", "", false, []string{"a", "b c"}},
		{"stdin, a line each", []string{"-"}, "one\ntwo\r\n\nthree", "", false, []string{"one", "two", "", "three"}},
		{"stdin, the final newline ends the last", []string{"-"}, "one\n", "", false, []string{"one"}},
		{"stdin raw", []string{"-"}, "one\ntwo\n", "", true, []string{"one\ntwo\n"}},
		{"a file, a line each", nil, "", file, false, []string{"\xff\x00", "x"}},
		{"a file raw: binary byte for byte", nil, "", file, true, []string{string(binary)}},
	} {
		g := &globals{in: strings.NewReader(c.stdin)}

		// Act.
		got, err := g.records(c.args, c.file, c.raw)

		// Check.
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
			continue
		}
		for i := range got {
			if !bytes.Equal(got[i], []byte(c.want[i])) {
				t.Errorf("%s: record %d is %q, want %q", c.name, i, got[i], c.want[i])
			}
		}
	}
	for _, c := range []struct {
		name string
		args []string
		file string
		raw  bool
	}{
		{"no record", nil, "", false},
		{"--raw with arguments", []string{"a"}, "", true},
		{"--file and arguments", []string{"a"}, file, false},
		{"a missing file", nil, filepath.Join(dir, "none"), false},
		{"empty stdin", []string{"-"}, "", false},
	} {
		g := &globals{in: strings.NewReader("")}
		if _, err := g.records(c.args, c.file, c.raw); !isBadArgs(err) {
			t.Errorf("%s: %v, want exit 2", c.name, err)
		}
	}
}

func TestWriteCutsBatchesWithinTheLimits(t *testing.T) {
	// Arrange: more records than one write carries, and records whose
	// bytes pass the byte limit.
	many := make([][]byte, journal.WriteRecordsMax*2+1)
	for i := range many {
		many[i] = []byte("r")
	}
	big := [][]byte{make([]byte, journal.WriteBytesMax/2+1), make([]byte, journal.WriteBytesMax/2+1), []byte("x")}

	// Act.
	byCount, err1 := batch(many)
	byBytes, err2 := batch(big)
	_, err3 := batch([][]byte{make([]byte, journal.WriteBytesMax+1)})

	// Check.
	if err1 != nil || len(byCount) != 3 || len(byCount[0]) != journal.WriteRecordsMax || len(byCount[2]) != 1 {
		t.Errorf("by count: %d batches, %v", len(byCount), err1)
	}
	if err2 != nil || len(byBytes) != 2 || len(byBytes[0]) != 1 || len(byBytes[1]) != 2 {
		t.Errorf("by bytes: %d batches, %v", len(byBytes), err2)
	}
	if !isBadArgs(err3) {
		t.Errorf("a record over the byte limit: %v, want exit 2", err3)
	}
}

func TestTheFenceBookRemembersByCellAndJournal(t *testing.T) {
	// Arrange: the book in a fresh cache dir.
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	id, other := journal.ID{Tenant: 1, Journal: 2}, journal.ID{Tenant: 1, Journal: 3}
	u := journal.LeaderUUID{Hi: 0xabc, Lo: 0xdef}
	if _, ok := knownFence(7, id); ok {
		t.Fatal("an empty book knows a fence")
	}

	// Act.
	err1 := rememberFence(7, id, u)
	err2 := rememberFence(7, other, journal.LeaderUUID{Hi: 1, Lo: 1})

	// Check.
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if got, ok := knownFence(7, id); !ok || got != u {
		t.Errorf("knownFence = %v, %v; want %v", got, ok, u)
	}
	if _, ok := knownFence(8, id); ok {
		t.Error("another cell's journal of the same id shares the fence")
	}
	path, _ := fenceBookPath()
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the book %s: %v, mode %v; want 0600", path, err, st.Mode())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the book's dir holds %d files, want the book alone", len(entries))
	}
}
