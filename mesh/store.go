package mesh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileStore persists held events as JSONL, one event per line. Append adds
// lines at the end; Rewrite writes every line beside the file (extension
// .jsonl.tmp), syncs it and renames it over the file, so a crash leaves the
// old file or the new one, never a mix. Pending events and tombstones are
// not persisted.
type FileStore struct {
	Path string
}

// fileLineBytesMax bounds one line read back; an event is at most
// eventBytesMax, so anything longer is damage.
const fileLineBytesMax = 2 * eventBytesMax

// Append writes lines at the end of the file and syncs it.
func (s *FileStore) Append(lines [][]byte) error {
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
		return fmt.Errorf("paros/mesh: journal dir: %w", err)
	}
	f, err := os.OpenFile(s.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("paros/mesh: open journal: %w", err)
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	_, werr := f.Write(buf.Bytes())
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("paros/mesh: append journal: %w", err)
	}
	return nil
}

// Rewrite replaces the file's content with lines, atomically.
func (s *FileStore) Rewrite(lines [][]byte) error {
	tmp := strings.TrimSuffix(s.Path, filepath.Ext(s.Path)) + ".jsonl.tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("paros/mesh: rewrite journal: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		w.Write(l)
		w.WriteByte('\n')
	}
	ferr := w.Flush()
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(ferr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("paros/mesh: rewrite journal: %w", err)
	}
	if err := os.Rename(tmp, s.Path); err != nil {
		return fmt.Errorf("paros/mesh: rewrite journal: %w", err)
	}
	if d, err := os.Open(filepath.Dir(s.Path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Load reads every line of the file; a missing file holds nothing. Lines
// are not checked here: Journal.Reload runs them through ingest.
func (s *FileStore) Load() ([][]byte, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("paros/mesh: load journal: %w", err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), fileLineBytesMax)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			out = append(out, bytes.Clone(line))
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("paros/mesh: load journal %s: %w", s.Path, err)
	}
	return out, nil
}
