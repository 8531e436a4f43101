package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parosdb/paros/core/journal"
)

// The fence book: the writer fences this user's parosctl claimed, so that
// a later `write` without --fence goes on with its own fence and never
// takes over one an application holds. It is one small JSON file,
// os.UserCacheDir()/paros/fences.json (mode 0600), mapping "CELL/JOURNAL"
// (the cell's id and the journal's id, in hex) to the fence, 32 hex
// digits. It is rewritten whole and atomically (a temporary file renamed
// over it); two parosctl claiming at once may each keep only its own
// entry, which costs a later write a --take-over, never a wrong fence.

// fenceBookFile is the book's path under os.UserCacheDir().
const fenceBookFile = "paros/fences.json"

// fenceBookMax bounds the entries kept: past it the book starts over (a
// forgotten fence costs a --take-over or --fence, nothing else).
const fenceBookMax = 10_000

func fenceBookPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, fenceBookFile), nil
}

func fenceKey(cell uint64, id journal.ID) string { return fmt.Sprintf("%016x/%s", cell, id) }

// readFenceBook loads the book; a missing file is an empty book.
func readFenceBook() (map[string]string, error) {
	path, err := fenceBookPath()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	book := map[string]string{}
	if err := json.Unmarshal(b, &book); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return book, nil
}

// knownFence is the fence the book holds for the journal id of cell, if
// any. An unreadable book holds none.
func knownFence(cell uint64, id journal.ID) (journal.LeaderUUID, bool) {
	book, err := readFenceBook()
	if err != nil {
		return journal.LeaderUUID{}, false
	}
	u, err := parseUUID(book[fenceKey(cell, id)])
	return u, err == nil && u.IsSet()
}

// rememberFence records u as the fence this user claimed on the journal
// id of cell.
func rememberFence(cell uint64, id journal.ID, u journal.LeaderUUID) error {
	path, err := fenceBookPath()
	if err != nil {
		return err
	}
	book, err := readFenceBook()
	if err != nil || len(book) >= fenceBookMax {
		book = map[string]string{}
	}
	book[fenceKey(cell, id)] = formatUUID(u)
	b, err := json.MarshalIndent(book, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".fences-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is there
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
