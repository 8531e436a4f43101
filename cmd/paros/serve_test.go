// This file checks how serve's scrub flags become the scrubber's tunables:
// wall time to whole ticks of the production tick (the pass bound rounded
// down, the interval rounded up), the defaults equal to the core's
// production pace, and a pace below the floors refused as a bad
// configuration (exit 2) before anything starts; that --role takes node,
// replica or proxy and refuses anything else as a bad configuration, before
// a data dir is touched; and that paros dev lays out its machines, then its
// replicas, then its proxies, and refuses a --proxies count out of range
// before anything starts.
package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/machine"
)

func TestScrubPaceInTicks(t *testing.T) {
	cases := []struct {
		pace                  scrubPace
		passTicks, everyTicks int
		refused               bool
	}{
		{pace: defaultScrubPace, passTicks: 72_000, everyTicks: 2},
		{pace: scrubPace{pass: 5 * time.Second, interval: 50 * time.Millisecond}, passTicks: 100, everyTicks: 1},
		{pace: scrubPace{pass: 5*time.Second + 49*time.Millisecond, interval: 75 * time.Millisecond}, passTicks: 100, everyTicks: 2},
		{pace: scrubPace{pass: 4999 * time.Millisecond, interval: 50 * time.Millisecond}, refused: true},
		{pace: scrubPace{pass: time.Hour, interval: 49 * time.Millisecond}, refused: true},
		{pace: scrubPace{pass: time.Hour, interval: 0}, refused: true},
	}
	for _, c := range cases {
		tun := host.Production()
		err := c.pace.apply(&tun)
		var ee exitError
		switch {
		case c.refused && (!errors.As(err, &ee) || ee.code != exitBadConfig):
			t.Errorf("pace %+v: %v, want a bad-config refusal (exit %d)", c.pace, err, exitBadConfig)
		case !c.refused && err != nil:
			t.Errorf("pace %+v refused: %v", c.pace, err)
		case !c.refused && (tun.ScrubPassTicks != c.passTicks || tun.ScrubIntervalTicks != c.everyTicks):
			t.Errorf("pace %+v: pass %d ticks, interval %d ticks; want %d and %d", c.pace,
				tun.ScrubPassTicks, tun.ScrubIntervalTicks, c.passTicks, c.everyTicks)
		case !c.refused:
			if err := tun.Validate(); err != nil {
				t.Errorf("pace %+v: the tunables are refused: %v", c.pace, err)
			}
		}
	}
}

func TestServeRefusesAnUnknownRole(t *testing.T) {
	// Arrange: serve with a role that does not exist.
	data := filepath.Join(t.TempDir(), "m")
	root := newRoot()
	root.SetArgs([]string{"serve", "--data", data, "--listen", "127.0.0.1:0", "--insecure", "--role", "learner"})

	// Act.
	err := root.Execute()

	// Check: a bad configuration (exit 2), and nothing was written.
	var ee exitError
	if !errors.As(err, &ee) || ee.code != exitBadConfig {
		t.Fatalf("serve --role learner: %v, want a bad-config refusal (exit %d)", err, exitBadConfig)
	}
	if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data dir was touched: %v", err)
	}
}

func TestDevLaysOutMachinesThenReplicasThenProxies(t *testing.T) {
	// Arrange: three machines, two replicas, two proxies.
	shape := devShape{replicas: 2, proxies: 2}
	want := []struct {
		role      machine.Role
		name, sub string
	}{
		{machine.RoleNode, "machine 1", "machine1"}, {machine.RoleNode, "machine 2", "machine2"}, {machine.RoleNode, "machine 3", "machine3"},
		{machine.RoleReplica, "replica 1", "replica1"}, {machine.RoleReplica, "replica 2", "replica2"},
		{machine.RoleProxy, "proxy 1", "proxy1"}, {machine.RoleProxy, "proxy 2", "proxy2"},
	}

	// Act and check.
	if shape.total() != len(want) {
		t.Fatalf("%d processes, want %d", shape.total(), len(want))
	}
	for i, w := range want {
		if role, name, sub := shape.at(i); role != w.role || name != w.name || sub != w.sub {
			t.Errorf("process %d: %v %q %q, want %v %q %q", i, role, name, sub, w.role, w.name, w.sub)
		}
	}
}

func TestDevRefusesAProxyCountOutOfRange(t *testing.T) {
	for _, n := range []string{"-1", "5"} {
		// Arrange: dev in a data dir that must stay untouched.
		data := filepath.Join(t.TempDir(), "dev")
		root := newRoot()
		root.SetArgs([]string{"dev", "--data", data, "--insecure", "--proxies", n})

		// Act.
		err := root.Execute()

		// Check: a bad configuration (exit 2), and nothing was written.
		var ee exitError
		if !errors.As(err, &ee) || ee.code != exitBadConfig {
			t.Fatalf("dev --proxies %s: %v, want a bad-config refusal (exit %d)", n, err, exitBadConfig)
		}
		if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("dev --proxies %s touched the data dir: %v", n, err)
		}
	}
}
