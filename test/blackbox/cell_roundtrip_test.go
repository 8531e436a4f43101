// This file checks a write/read/truncate/claim round trip through parosctl
// against a real cell (cell_test.go): the write fence rule (another user is
// refused until --take-over), and a read below the floor reported as a gap.

package blackbox

import (
	"strings"
	"testing"
)

func TestRoundTripThroughParosctl(t *testing.T) {
	c := newCell(t)
	j := c.initCell()

	out, code := c.ctl("write", j, "alpha", "beta")
	if code != 0 || !strings.Contains(out, "accepted seq=1 count=2") || !strings.Contains(out, "claimed fence=") {
		t.Fatalf("write: exit %d: %s", code, out)
	}
	fence := strings.Fields(out[strings.Index(out, "claimed fence=")+len("claimed fence="):])[0]
	// The fence this user claimed is reused: no --fence needed.
	if out, code = c.ctl("journal", "write", j, "gamma"); code != 0 || !strings.Contains(out, "accepted seq=3") || !strings.Contains(out, "fence="+fence) {
		t.Fatalf("a second write: exit %d: %s", code, out)
	}
	if out, code = c.ctl("read", j); code != 0 || !strings.Contains(out, "1\talpha") || !strings.Contains(out, "3\tgamma") {
		t.Fatalf("read: exit %d: %s", code, out)
	}
	if out, code = c.ctl("journal", "truncate", j, "--up-to", "3"); code != 0 || !strings.Contains(out, "first_seq=3") {
		t.Fatalf("truncate: exit %d: %s", code, out)
	}
	if out, code = c.ctl("journal", "read", j, "--from", "1"); code != 0 || !strings.Contains(out, "gap: positions [1, 3)") {
		t.Fatalf("read below the floor must report a gap: exit %d: %s", code, out)
	}
	// Another user (another fence book) finds the fence held by someone
	// else: refused, until --take-over.
	other := []string{"PAROSCTL_CA=" + c.caFile, "XDG_CACHE_HOME=" + c.t.TempDir()}
	if out, code = c.ctlEnv(other, "--token", c.token, "write", j, "intruder"); code != 3 || !strings.Contains(out, "--take-over") {
		t.Fatalf("a write over someone else's fence: exit %d: %s; want 3 naming --take-over", code, out)
	}
	if out, code = c.ctlEnv(other, "--token", c.token, "write", j, "taken", "--take-over"); code != 0 || !strings.Contains(out, "claimed fence=") {
		t.Fatalf("write --take-over: exit %d: %s", code, out)
	}
	// The first user's fence is superseded now: refused without --fence,
	// and with it (exit 3).
	if out, code = c.ctl("write", j, "stale"); code != 3 || !strings.Contains(out, "held by someone else") {
		t.Fatalf("a write after a take-over: exit %d: %s", code, out)
	}
	if out, code = c.ctl("journal", "claim", j); code != 0 || !strings.Contains(out, "fence_set") {
		t.Fatalf("journal claim: exit %d: %s", code, out)
	}
	if out, code = c.ctl("write", j, "stale", "--fence", fence); code != 3 || !strings.Contains(out, "refused") {
		t.Fatalf("a superseded writer's write: exit %d: %s", code, out)
	}
	if out, code = c.ctl("journal", "inspect", j); code != 0 || !strings.Contains(out, "role=leader") {
		t.Fatalf("inspect: exit %d: %s", code, out)
	}
}
