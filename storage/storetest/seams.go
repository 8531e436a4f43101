package storetest

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// HookFS wraps a vfs.FS and calls a hook just before every file or directory
// sync and every rename: the durability seams of anything that writes
// through it. A crash test installs a hook that takes crash clones of the
// underlying vfs.MemFS (vfs.MemFS.CrashClone) at the seam it wants.
type HookFS struct {
	vfs.FS
	hook atomic.Pointer[func(op, path string)]
}

// NewHookFS wraps fs.
func NewHookFS(fs vfs.FS) *HookFS { return &HookFS{FS: fs} }

// SetHook installs fn (nil removes it). fn runs on whatever goroutine syncs,
// before the sync or rename happens.
func (h *HookFS) SetHook(fn func(op, path string)) {
	if fn == nil {
		h.hook.Store(nil)
		return
	}
	h.hook.Store(&fn)
}

func (h *HookFS) before(op, path string) {
	if fn := h.hook.Load(); fn != nil {
		(*fn)(op, path)
	}
}

func (h *HookFS) wrap(f vfs.File, path string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, fs: h, path: path}, nil
}

// Create implements vfs.FS.
func (h *HookFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := h.FS.Create(name, c)
	return h.wrap(f, name, err)
}

// OpenReadWrite implements vfs.FS.
func (h *HookFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := h.FS.OpenReadWrite(name, c, opts...)
	return h.wrap(f, name, err)
}

// ReuseForWrite implements vfs.FS.
func (h *HookFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	h.before("rename", newname)
	f, err := h.FS.ReuseForWrite(oldname, newname, c)
	return h.wrap(f, newname, err)
}

// OpenDir implements vfs.FS.
func (h *HookFS) OpenDir(name string) (vfs.File, error) {
	f, err := h.FS.OpenDir(name)
	return h.wrap(f, name, err)
}

// Rename implements vfs.FS.
func (h *HookFS) Rename(oldname, newname string) error {
	h.before("rename", newname)
	return h.FS.Rename(oldname, newname)
}

type hookFile struct {
	vfs.File
	fs   *HookFS
	path string
}

func (f *hookFile) Sync() error {
	f.fs.before("sync", f.path)
	return f.File.Sync()
}

func (f *hookFile) SyncData() error {
	f.fs.before("sync", f.path)
	return f.File.SyncData()
}

// Keep is how much unsynced data a crash clone keeps.
type Keep struct {
	Percent int
	Seed    uint64 // for 0 < Percent < 100
}

func (k Keep) String() string {
	if k.Percent > 0 && k.Percent < 100 {
		return fmt.Sprintf("%d%%/seed %d", k.Percent, k.Seed)
	}
	return fmt.Sprintf("%d%%", k.Percent)
}

// Keeps are the crash clones every seam is recovered from: none of the
// unsynced data, half of it under several seeds, all of it.
var Keeps = []Keep{{0, 0}, {50, 1}, {50, 2}, {50, 3}, {50, 4}, {100, 0}}

// Matrix collects, per seam and crash point, the state each crash clone
// recovered to, and prints it as a table.
type Matrix struct {
	rows  []matrixRow
	index map[string]int
}

type matrixRow struct {
	seam, at string
	cells    map[int]string // by Keep.Percent
}

// Add records that crashing at (seam, at) and keeping k recovered to state.
func (m *Matrix) Add(seam, at string, k Keep, state string) {
	if m.index == nil {
		m.index = map[string]int{}
	}
	key := seam + "\x00" + at
	i, ok := m.index[key]
	if !ok {
		i = len(m.rows)
		m.index[key] = i
		m.rows = append(m.rows, matrixRow{seam: seam, at: at, cells: map[int]string{}})
	}
	r := &m.rows[i]
	if _, seen := r.cells[k.Percent]; !seen {
		r.cells[k.Percent] = state
		return
	}
	r.cells[k.Percent] += " " + state
}

// Log prints the matrix.
func (m *Matrix) Log(t testing.TB) {
	t.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "crash seam matrix (recovered state per crash clone; 50%% = seeds 1-4)\n")
	fmt.Fprintf(&sb, "%-34s %-26s %-6s %-22s %-6s\n", "seam", "crash at", "0%", "50%", "100%")
	fmt.Fprintf(&sb, "%s\n", strings.Repeat("-", 98))
	for _, r := range m.rows {
		fmt.Fprintf(&sb, "%-34s %-26s %-6s %-22s %-6s\n", r.seam, r.at, r.cells[0], r.cells[50], r.cells[100])
	}
	t.Log("\n" + sb.String())
}
