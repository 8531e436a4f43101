package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// startProfile takes a CPU profile of the system's consensus leader and
// of one follower over the measured window of the phase. The files stay in
// profDir (not for committing); summarize them once the phase is over.
func startProfile(ctx context.Context, s system, profDir, id string, t timing) chan []memberProfile {
	done := make(chan []memberProfile, 1)
	go func() {
		sleepCtx(ctx, t.warmup)
		l, err := s.leader(ctx)
		if err != nil {
			done <- nil
			return
		}
		secs := max(int(t.measure.Seconds())-1, 1)
		f := (l + 1) % len(s.members())
		profs := make([]memberProfile, 2)
		var wg sync.WaitGroup
		for k, m := range []struct {
			i    int
			role string
		}{{l, "leader"}, {f, "follower"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				profs[k] = memberProfile{i: m.i, role: m.role, path: profileMember(s, profDir, id, m.i, m.role, secs)}
			}()
		}
		wg.Wait()
		done <- profs
	}()
	return done
}

// memberProfile is a CPU profile file of member i ("" when it could not be
// taken).
type memberProfile struct {
	i          int
	role, path string
}

// profileMember takes a CPU profile of member i over secs seconds into
// profDir and returns its path ("" when it cannot).
func profileMember(s system, profDir, id string, i int, role string, secs int) string {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprofAddr(i), secs)
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	_ = os.MkdirAll(profDir, 0o755)
	path := filepath.Join(profDir, fmt.Sprintf("%s-%s-%s.pprof", s.key(), id, role))
	f, err := os.Create(path)
	if err != nil {
		return ""
	}
	_, err = io.Copy(f, resp.Body)
	f.Close()
	if err != nil {
		return ""
	}
	return path
}

// summarizeProfile summarizes a profile with `go tool pprof -top` ("" when
// it cannot). It runs after the phase: the first `go tool pprof` of a Go
// installation may build the tool, which must not compete with a measured
// window for the cores.
func summarizeProfile(s system, p memberProfile) string {
	if p.path == "" {
		return ""
	}
	bin := ""
	if ps, ok := s.(*parosSys); ok {
		bin = ps.bin
	}
	outb, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=18", bin, p.path).Output()
	if err != nil {
		return ""
	}
	return fmt.Sprintf("profile: %s (%s %s; not committed)\n%s", filepath.Join("profiles", filepath.Base(p.path)), p.role, s.members()[p.i].name, trimPprof(string(outb)))
}

// trimPprof keeps pprof's header lines and the table.
func trimPprof(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
