// This file checks what a real cell (cell_test.go) refuses: a restart whose
// journal store was deleted is refused as amnesia with exit code 78; a
// restart under an edited machine record (another cell plan) is refused, and
// so is a restart under another machine's certificate; and the credentials
// are required: `paros serve` without --tls or --insecure and parosctl
// without a CA refuse to run (exit 2), and a parosctl without a token is
// refused by the cell (exit 3).

package blackbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAmnesiaIsRefused(t *testing.T) {
	c := newCell(t)
	j := c.initCell()
	if out, code := c.ctl("write", j, "x"); code != 0 {
		t.Fatalf("write: %s", out)
	}
	p := c.procs[2]
	_ = p.cmd.Process.Signal(os.Kill)
	<-p.done
	if err := os.RemoveAll(filepath.Join(p.data, "store")); err != nil {
		t.Fatal(err)
	}
	c.start(p)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a machine whose store was deleted kept running")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 78 || !strings.Contains(p.stderr.String(), "amnesia") {
		t.Fatalf("restart after losing the store: exit %d, stderr %q; want 78 naming amnesia", code, p.stderr.String())
	}
}

func TestEditedRecordIsRefused(t *testing.T) {
	c := newCell(t)
	c.initCell()
	p := c.procs[1]
	_ = p.cmd.Process.Signal(os.Kill)
	<-p.done
	// The operator edits the machine record (it is checksummed): refused,
	// never reformatted.
	path := filepath.Join(p.data, "MACHINE")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(`"addr":"`), []byte(`"addr":"x`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start(p)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a machine with an edited record kept running")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 78 {
		t.Fatalf("restart under an edited record exited %d, want 78 (do not restart); stderr %q", code, p.stderr.String())
	}
}

func TestAnotherMachinesCertificateIsRefused(t *testing.T) {
	// Arrange: a formed cell; machine 2 stops.
	c := newCell(t)
	c.initCell()
	p := c.procs[1]
	_ = p.cmd.Process.Signal(os.Kill)
	<-p.done

	// Act: it restarts under machine 3's credentials.
	own := p.creds
	p.creds = c.procs[2].creds
	c.start(p)
	p.creds = own
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatal("a machine under another machine's certificate kept running")
	}

	// Check: refused, do not restart.
	if code := p.cmd.ProcessState.ExitCode(); code != 78 || !strings.Contains(p.stderr.String(), "certificate") {
		t.Fatalf("restart under another node's certificate: exit %d, stderr %q; want 78 naming the certificate", code, p.stderr.String())
	}
}

func TestCredentialsAreRequired(t *testing.T) {
	// Arrange: a formed cell.
	c := newCell(t)
	j := c.initCell()

	// Act and check: serve without --tls or --insecure.
	out, err := exec.Command(filepath.Join(binDir, "paros"), "serve", "--data", t.TempDir(), "--listen", freeAddr(t)).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--tls") || !strings.Contains(string(out), "--insecure") {
		t.Fatalf("serve without credentials: %v: %s; want exit 2 naming --tls and --insecure", err, out)
	}
	// parosctl without a CA.
	if out, code := c.ctlEnv(nil, "read", j); code != 2 || !strings.Contains(out, "PAROSCTL_CA") || !strings.Contains(out, "--insecure") {
		t.Fatalf("parosctl without a CA: exit %d: %s; want 2 naming PAROSCTL_CA and --insecure", code, out)
	}
	// parosctl with the CA and no token: refused by the cell.
	if out, code := c.ctlEnv([]string{"PAROSCTL_CA=" + c.caFile}, "read", j); code != 3 || !strings.Contains(out, "refused") {
		t.Fatalf("parosctl without a token: exit %d: %s; want 3, refused", code, out)
	}
	// parosctl --insecure against the TLS cell reaches nothing.
	if out, code := c.ctlEnv(nil, "--insecure", "--timeout", "1s", "read", j); code != 1 {
		t.Fatalf("parosctl --insecure against a TLS cell: exit %d: %s; want 1 (unreachable)", code, out)
	}
	// A client-scoped token (read on this journal only) reads, and may not
	// write.
	reader := c.paros("cert", "token", "--ca", c.caDir, "--subject", "reader", "--journal", j, "--ops", "read")
	if out, code := c.ctlEnv([]string{"PAROSCTL_CA=" + c.caFile, "PAROSCTL_TOKEN=" + reader}, "read", j); code != 0 {
		t.Fatalf("read with a read token: exit %d: %s", code, out)
	}
	if out, code := c.ctlEnv([]string{"PAROSCTL_CA=" + c.caFile, "PAROSCTL_TOKEN=" + reader}, "write", j, "x"); code != 3 || !strings.Contains(out, "refused") {
		t.Fatalf("write with a read token: exit %d: %s; want 3, refused", code, out)
	}
}
