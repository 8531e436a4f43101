package main

// Child processes: every member of every cell runs as its own process on
// 127.0.0.1. Each child is started with Pdeathsig=SIGKILL, so it dies with
// the harness even if the harness itself is killed, and every child is
// registered so that killAll can end them on any exit path.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one process started by the harness.
type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
	// killed is set when the harness itself killed the process (kill -9 in
	// W5, or teardown), so an exit is not reported as a crash.
	killedMu sync.Mutex
	killed   bool
}

var (
	childrenMu sync.Mutex
	children   []*child
)

// startChild runs bin with args, its stdout and stderr appended to logPath.
func startChild(name, logPath, bin string, args ...string) (*child, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, done: make(chan struct{}), log: lf}
	go func() {
		_ = cmd.Wait()
		lf.Close()
		close(c.done)
	}()
	childrenMu.Lock()
	children = append(children, c)
	childrenMu.Unlock()
	return c, nil
}

// alive reports whether the process has not exited.
func (c *child) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (c *child) kill() {
	c.killedMu.Lock()
	c.killed = true
	c.killedMu.Unlock()
	if c.alive() {
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
	}
}

// rssBytes reads VmRSS of the process from /proc (0 when gone).
func (c *child) rssBytes() int64 {
	if !c.alive() {
		return 0
	}
	return procRSS(c.cmd.Process.Pid)
}

func procRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// procCPU returns the process's user+system CPU time from /proc/PID/stat.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ = 100 on Linux
}

// procWriteBytes is what the process caused to be written to storage
// (/proc/PID/io write_bytes: the page cache's writeback and direct writes,
// which is what the disk has to absorb), or 0 where it cannot be read.
func procWriteBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// killAll ends every child the harness started that is still running.
func killAll() {
	childrenMu.Lock()
	cs := append([]*child(nil), children...)
	childrenMu.Unlock()
	for _, c := range cs {
		c.kill()
	}
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1 (they are
// released before use, so a race with another program is possible but
// unlikely on a test machine).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// waitTCP waits until addr accepts a connection.
func waitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %v: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rssSampler samples the RSS of a set of processes until stopped and keeps
// the peak of each.
type rssSampler struct {
	procs []*child
	peak  []int64
	stop  chan struct{}
	done  chan struct{}
}

func sampleRSS(procs []*child, every time.Duration) *rssSampler {
	s := &rssSampler{procs: procs, peak: make([]int64, len(procs)), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for i, p := range s.procs {
				s.peak[i] = max(s.peak[i], p.rssBytes())
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// finish stops sampling and returns the peak RSS of each process.
func (s *rssSampler) finish() []int64 {
	close(s.stop)
	<-s.done
	return s.peak
}
