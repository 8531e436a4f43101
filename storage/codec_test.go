package storage

// These tests check the command value codec: every variant round-trips,
// the encoding is canonical (re-encoding a decoded value gives the same
// bytes), and hostile bytes never panic and are refused with ErrBadValue.

import (
	"bytes"
	"errors"
	"testing"

	"github.com/parosdb/paros/core/journal"
)

var codecSamples = []journal.Command{
	journal.Noop(),
	journal.Truncate(journal.LeaderUUID{Hi: 1, Lo: 2}, 99),
	journal.SetLeader(journal.LeaderUUID{Hi: 3}, journal.LeaderUUID{}),
	journal.Write(journal.Entry{Leader: journal.LeaderUUID{Lo: 7}, Seq: 1 << 40, Records: [][]byte{{}, []byte("ab"), make([]byte, 300)}}),
	journal.Write(journal.Entry{Seq: 1}),
}

func TestCommandRoundTrip(t *testing.T) {
	for _, c := range codecSamples {
		enc := AppendCommand(nil, c)
		got, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if !got.Equal(c) || got.Fingerprint() != c.Fingerprint() {
			t.Fatalf("round trip %s -> %s", c, got)
		}
		if again := AppendCommand(nil, got); !bytes.Equal(again, enc) {
			t.Fatalf("not canonical: %x vs %x", again, enc)
		}
	}
}

func TestCommandDecodeRefuses(t *testing.T) {
	good := AppendCommand(nil, codecSamples[3])
	cases := map[string][]byte{
		"empty":          nil,
		"one byte":       {1},
		"bad version":    {2, 4},
		"bad kind":       {1, 9},
		"kind zero":      {1, 0},
		"short uuid":     {1, 2, 0, 0},
		"trailing":       append(AppendCommand(nil, journal.Noop()), 0),
		"truncated body": good[:len(good)-1],
		"huge count":     {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, p := range cases {
		if _, err := DecodeCommand(p); !errors.Is(err, ErrBadValue) {
			t.Errorf("%s: got %v, want ErrBadValue", name, err)
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range codecSamples {
		f.Add(AppendCommand(nil, c))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := DecodeCommand(p)
		if err != nil {
			if !errors.Is(err, ErrBadValue) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if !c.Valid() {
			t.Fatalf("decoded an invalid command %v", c)
		}
		if again := AppendCommand(nil, c); !bytes.Equal(again, p) {
			t.Fatalf("accepted a non-canonical encoding %x (canonical %x)", p, again)
		}
	})
}
