package machinerecord

import (
	"fmt"
	"os"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// BenchmarkStore measures one durable rewrite of a machine record holding
// n journals created by the control plane (and as many retired ones), on
// the real disk: the cost a member pays for every registry page that
// places or removes journals on it. It grows with n, which is what bounds
// how fast a cell creates journals by the thousand.
func BenchmarkStore(b *testing.B) {
	for _, n := range []int{100, 1_000, 10_000} {
		r := sample
		r.Journals = nil
		for i := range n {
			r.Joined = append(r.Joined, JoinedJournal{Tenant: 7, Journal: uint64(i + 1),
				Members: []uint64{0xfeed, 2, 3}, Mode: 1, Formatted: true, Created: true})
			r.Retired = append(r.Retired, JournalID{Tenant: 7, Journal: uint64(n + i + 1)})
		}
		enc, err := Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("journals=%d", n), func(b *testing.B) {
			dir, err := os.MkdirTemp("", "machinerecord-bench")
			if err != nil {
				b.Fatal(err)
			}
			defer os.RemoveAll(dir)
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if err := Store(vfs.Default, dir, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
