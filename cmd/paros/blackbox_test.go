// This file checks the paros binary from the outside, as a new user would
// use it: it builds the binary with `go build` into a temporary directory,
// writes two checkouts' .paros/mesh.toml (loopback, any free port, one
// declared repository, heartbeat 1 s, expiry 3 s), starts `paros mesh
// serve` in each — the second seeded with the first's address, both under
// one state directory, so one machine key — and then drives the CLI: the
// two link and converge, an exclusive claim made in one checkout is refused
// in the other with exit code 10 naming the holder, a release frees it, and
// `verify` passes. Every wait polls with a deadline; the processes are
// stopped at the end. It also checks that a configuration with an unknown
// key and a bad --format are refused.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parosdb/paros/mesh"
)

const blackboxDeadline = 90 * time.Second

type harness struct {
	t     *testing.T
	ctx   context.Context
	bin   string
	state string
	home  string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary and runs servers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), blackboxDeadline)
	t.Cleanup(cancel)
	dir := t.TempDir()
	bin := filepath.Join(dir, "paros")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return &harness{t: t, ctx: ctx, bin: bin, state: filepath.Join(dir, "state"), home: filepath.Join(dir, "home")}
}

// checkout makes a directory with .paros/mesh.toml.
func (h *harness) checkout(name, extra string) string {
	h.t.Helper()
	dir := filepath.Join(filepath.Dir(h.bin), name)
	if err := os.MkdirAll(filepath.Join(dir, ".paros"), 0o755); err != nil {
		h.t.Fatal(err)
	}
	cfg := fmt.Sprintf("name = %q\nrepository = \"blackbox\"\nlisten = \"127.0.0.1:0\"\nheartbeat_seconds = 1\nexpiry_seconds = 3\n%s", name, extra)
	if err := os.WriteFile(filepath.Join(dir, ".paros", "mesh.toml"), []byte(cfg), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return dir
}

func (h *harness) command(dir string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(h.ctx, h.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+h.state, "HOME="+h.home)
	return cmd
}

// run runs the CLI in dir and returns stdout, stderr and the exit code.
func (h *harness) run(dir string, args ...string) (string, string, int) {
	h.t.Helper()
	cmd := h.command(dir, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &ee):
		return out.String(), errOut.String(), ee.ExitCode()
	}
	h.t.Fatalf("paros %v: %v", args, err)
	return "", "", -1
}

// runJSON runs a command with --format json, requires exit 0, and decodes stdout.
func (h *harness) runJSON(dir string, v any, args ...string) {
	h.t.Helper()
	out, errOut, code := h.run(dir, append(args, "--format", "json")...)
	if code != 0 {
		h.t.Fatalf("paros %v: exit %d\n%s%s", args, code, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		h.t.Fatalf("paros %v: %v\n%s", args, err, out)
	}
}

// serve starts `paros mesh serve` in dir and stops it at the end of the test.
func (h *harness) serve(dir string, args ...string) *bytes.Buffer {
	h.t.Helper()
	cmd := h.command(dir, append([]string{"mesh", "serve"}, args...)...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.Cancel = func() error { return cmd.Process.Kill() }
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	h.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if h.t.Failed() {
			h.t.Logf("logs of serve in %s:\n%s", filepath.Base(dir), logs.String())
		}
	})
	return &logs
}

// eventually polls cond every 100 ms until it holds or the deadline passes.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	for {
		if cond() {
			return
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("timed out waiting until %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// endpoint waits for dir's runtime to serve and returns its address.
func (h *harness) endpoint(dir string) string {
	h.t.Helper()
	var id struct {
		Runtime string `json:"runtime"`
	}
	h.runJSON(dir, &id, "mesh", "identity")
	_, rt, _ := strings.Cut(id.Runtime, "-")
	path := filepath.Join(h.state, "paros", "mesh", "runtimes", rt+".json")
	var ep string
	h.eventually("the runtime in "+filepath.Base(dir)+" serves", func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		var rf struct {
			Endpoint string `json:"endpoint"`
		}
		if json.Unmarshal(data, &rf) != nil {
			return false
		}
		ep = rf.Endpoint
		_, _, code := h.run(dir, "mesh", "status")
		return code == 0
	})
	return ep
}

func TestTwoServersLinkConvergeAndRefuseAConflictingClaim(t *testing.T) {
	// Arrange: two checkouts of one repository, each with a server.
	h := newHarness(t)
	alice := h.checkout("alice", "")
	bob := h.checkout("bob", "")
	h.serve(alice)
	aliceURL := h.endpoint(alice)
	h.serve(bob, "--seed", aliceURL)
	h.endpoint(bob)
	h.eventually("bob's link to alice is connected", func() bool {
		var peers []mesh.PeerView
		h.runJSON(bob, &peers, "mesh", "peers")
		return len(peers) == 1 && peers[0].State == mesh.LinkConnected && peers[0].Liveness == "live"
	})

	// Act: alice claims src/api; bob then claims src.
	var claim mesh.ClaimView
	h.runJSON(alice, &claim, "mesh", "claim", "src/api", "--session", "alice", "--intent", "rework the API")
	h.eventually("bob sees alice's claim", func() bool {
		var st mesh.State
		h.runJSON(bob, &st, "mesh", "state")
		return len(st.Claims) == 1 && st.Claims[0].Key == claim.Key && st.Claims[0].Status.State == mesh.ClaimHeld
	})
	out, errOut, code := h.run(bob, "mesh", "claim", "src", "--session", "bob")

	// Check: refused with exit 10, naming alice's claim and session.
	if code != 10 || !strings.Contains(errOut, claim.Key) || !strings.Contains(errOut, claim.Session) {
		t.Fatalf("bob's conflicting claim: exit %d\nstdout %s\nstderr %s\nwant exit 10 naming %s", code, out, errOut, claim.Key)
	}
	out, _, code = h.run(bob, "mesh", "claim", "src", "--session", "bob", "--format", "json")
	if code != 10 || !strings.Contains(out, `"claim_conflict"`) {
		t.Fatalf("json conflict: exit %d, %s", code, out)
	}
	if _, _, code := h.run(bob, "mesh", "claim", "docs", "--session", "bob"); code != 0 {
		t.Fatalf("bob's claim on docs: exit %d", code)
	}
	// Both converge to one digest, and verify says so.
	h.eventually("both print one digest", func() bool {
		var a, b mesh.State
		h.runJSON(alice, &a, "mesh", "state")
		h.runJSON(bob, &b, "mesh", "state")
		return a.Digest == b.Digest && len(a.Claims) == 2
	})
	for _, dir := range []string{alice, bob} {
		var rep mesh.VerifyReport
		h.runJSON(dir, &rep, "mesh", "verify")
		if !rep.OK {
			t.Fatalf("verify in %s: %+v", filepath.Base(dir), rep)
		}
	}
	// Released in alice, the scope is free in bob.
	if _, errOut, code := h.run(alice, "mesh", "release", claim.Key); code != 0 {
		t.Fatalf("release: exit %d %s", code, errOut)
	}
	h.eventually("bob may claim src once alice released", func() bool {
		_, _, code := h.run(bob, "mesh", "claim", "src", "--session", "bob")
		return code == 0
	})
}

func TestTheCLIRefusesAnUnknownConfigurationKeyAndABadFormat(t *testing.T) {
	// Arrange.
	h := newHarness(t)
	dir := h.checkout("typo", "heartbeat = 2\n")

	// Act.
	_, errOut, code := h.run(dir, "mesh", "serve")
	_, _, formatCode := h.run(dir, "mesh", "identity", "--format", "yaml")

	// Check.
	if code != 1 || !strings.Contains(errOut, "unknown key(s) heartbeat") {
		t.Fatalf("serve with an unknown key: exit %d, stderr %q", code, errOut)
	}
	if formatCode != 2 {
		t.Fatalf("--format yaml: exit %d, want 2 (usage)", formatCode)
	}
}
