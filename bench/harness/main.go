// Command bench compares paros with etcd and NATS JetStream on one machine,
// at equal durability, and measures the raw disk in the same run.
//
//	go run ./bench compare [--quick] [--out DIR]     (from the repository root)
//
// This harness is its own module (bench/harness) so the main module never
// carries etcd's or NATS's dependencies; bench/main.go, in the main module,
// is the launcher that runs it here with `go run .`.
//
// Each system runs as three processes on 127.0.0.1: `paros serve` built
// from the parent module; etcd and nats-server embedded as libraries in
// child processes of this harness (hidden subcommands etcd-member and
// nats-member). One load generator drives them all through their own Go
// clients. See README.md for the workloads and how to read the results.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
)

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "compare":
		err = compare(os.Args[2:])
	case "etcd-member": // hidden: one etcd member, started by compare
		err = etcdMember(os.Args[2:])
	case "nats-member": // hidden: one nats-server, started by compare
		err = natsMember(os.Args[2:])
	case "render": // hidden: rewrite the .md and .svg of a results .json
		err = render(os.Args[2:])
	case "names": // journals by name against JetStream streams
		err = names(os.Args[2:])
	default:
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		killAll()
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: go run ./bench compare [--quick] [--out DIR]   (from the repository root)")
	fmt.Fprintln(os.Stderr, "       go run ./bench names [--journals N] [--inflight N] [--out FILE]   journals by name against JetStream streams")
}

// timing is how long each phase runs.
type timing struct {
	warmup, measure time.Duration
	tail            time.Duration // W4 measured window
	failBefore      time.Duration // W5 load before the kill
	failAfter       time.Duration // W5 load after the kill
	disk            time.Duration // each disk baseline
}

var (
	fullTiming  = timing{warmup: 2 * time.Second, measure: 8 * time.Second, tail: 8 * time.Second, failBefore: 3 * time.Second, failAfter: 12 * time.Second, disk: 8 * time.Second}
	quickTiming = timing{warmup: 500 * time.Millisecond, measure: 2 * time.Second, tail: 3 * time.Second, failBefore: 2 * time.Second, failAfter: 8 * time.Second, disk: 2 * time.Second}
)

// Workload parameters (the same for every system).
const (
	w2Low       = 64
	w2High      = 1000
	w3Batch     = 64
	w3Inflight  = 16 // 16 × 64 = 1,024 records in flight, like W2's 1,000
	w4Rate      = 500
	w4Readers   = 4
	w5Inflight  = 64
	rssInterval = 250 * time.Millisecond
)

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "short phases (under 3 minutes in all)")
	out := fs.String("out", "", "where to write the results (default: bench/results)")
	only := fs.String("only", "", "comma-separated systems to run (paros,paros-replicas,paros-plaintext,paros-proxies,etcd,nats-always,nats-default,paros-scale,nats-scale); default all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	benchDir, root, err := findDirs()
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(benchDir, "results")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "paros-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	defer killAll()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Fprintln(os.Stderr, "\nbench: interrupted; stopping every child process")
		cancel()
		killAll()
		os.RemoveAll(work)
		os.Exit(130)
	}()

	t := fullTiming
	if *quick {
		t = quickTiming
	}
	// paros runs secure, as shipped (TLS 1.3 + tokens); "paros (2
	// replicas)" is the same with two replica machines (replicas.go);
	// "paros (plaintext)" runs W1 and W2 only, for the TLS-cost comparison;
	// "paros (2 proxies)" W2 with one Writer only, for the leader-cost
	// comparison (proxies.go).
	systems := []system{newParos(root, true), newParosReplicas(root), newParos(root, false), newParosProxies(root),
		newEtcd(self), newNATS(self, true), newNATS(self, false)}
	// The scale rows (scale.go) run after every system: paros with many
	// journals, JetStream with as many streams.
	selected := func(key string) bool { return *only == "" || strings.Contains(","+*only+",", ","+key+",") }
	parosScale, natsScale := selected("paros-scale"), selected("nats-scale")
	if *only != "" {
		var keep []system
		for _, s := range systems {
			if selected(s.key()) {
				keep = append(keep, s)
			}
		}
		systems = keep
		if len(systems) == 0 && !parosScale && !natsScale {
			return fmt.Errorf("--only %q names no system (paros, paros-replicas, paros-plaintext, paros-proxies, etcd, nats-always, nats-default, paros-scale, nats-scale)", *only)
		}
	}
	sp := scalePlanFor(*quick, t)

	rep := &report{Date: time.Now().Format("2006-01-02 15:04:05 MST"), Quick: *quick, Host: hostInfo(root),
		LoadBefore: loadAvg(), RecordBytes: recordBytes,
		Params: params{W2Low: w2Low, W2High: w2High, W3Batch: w3Batch, W3Inflight: w3Inflight,
			W4Rate: w4Rate, W4Readers: w4Readers, W5Inflight: w5Inflight,
			WarmupS: t.warmup.Seconds(), MeasureS: t.measure.Seconds()}}

	// Progress: one tick per second of planned work.
	planned := plannedSeconds(t, systems)
	if parosScale {
		planned += sp.seconds(true)
	}
	if natsScale {
		planned += sp.seconds(false)
	}
	pb := newProgress(planned)
	// One build of paros serves every paros system and the scale rows.
	var parosBin string
	needParos := parosScale
	for _, s := range systems {
		_, ok := s.(*parosSys)
		needParos = needParos || ok
	}
	if needParos {
		pb.phase("building paros")
		b := newParos(root, true)
		if err := b.build(work); err != nil {
			return err
		}
		parosBin = b.bin
	}
	for _, s := range systems {
		if p, ok := s.(*parosSys); ok {
			p.bin = parosBin
		}
	}

	pb.phase("disk: 4 KiB append + fdatasync")
	rep.Disk = append(rep.Disk, runDisk(work, 4096, t.disk))
	pb.add(int(t.disk.Seconds()))
	pb.phase("disk: 64 KiB append + fdatasync")
	rep.Disk = append(rep.Disk, runDisk(work, 64<<10, t.disk))
	pb.add(int(t.disk.Seconds()))

	profDir := filepath.Join(*out, "profiles")
	for _, s := range systems {
		if ctx.Err() != nil {
			break
		}
		rep.Systems = append(rep.Systems, runSystem(ctx, s, work, t, pb, profDir, rep))
	}
	if parosScale && ctx.Err() == nil {
		rep.Scale = append(rep.Scale, runScale(ctx, true, root, parosBin, self, work, sp, pb))
	}
	if natsScale && ctx.Err() == nil {
		rep.Scale = append(rep.Scale, runScale(ctx, false, root, parosBin, self, work, sp, pb))
	}
	pb.finish()
	rep.LoadAfter = loadAvg()
	rep.Targets = checkTargets(rep)

	stamp := time.Now().Format("2006-01-02")
	if *quick {
		stamp += "-quick"
	}
	paths, err := rep.write(*out, stamp)
	if err != nil {
		return err
	}
	fmt.Println(rep.markdownSummary())
	for _, p := range paths {
		fmt.Println("wrote", p)
	}
	return nil
}

// render rewrites <stamp>.md and <stamp>.svg (and the targets in the
// JSON) from a results JSON file, after a change to the report's layout.
func render(args []string) error {
	if len(args) != 1 || !strings.HasSuffix(args[0], ".json") {
		return errors.New("usage: go run ./bench render bench/results/STAMP.json")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	rep.Targets = checkTargets(&rep)
	paths, err := rep.write(filepath.Dir(args[0]), strings.TrimSuffix(filepath.Base(args[0]), ".json"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println("wrote", p)
	}
	return nil
}

// findDirs locates bench/ (this module) and the repository root.
func findDirs() (benchDir, root string, err error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if strings.Contains(string(b), "module github.com/parosdb/paros/bench/harness") {
				return filepath.Dir(d), filepath.Dir(filepath.Dir(d)), nil
			}
			if strings.Contains(string(b), "module github.com/parosdb/paros\n") {
				return filepath.Join(d, "bench"), d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", "", errors.New("run from the repository root (go run ./bench compare) or bench/harness: no go.mod of paros found above " + wd)
		}
	}
}

func plannedSeconds(t timing, systems []system) int {
	phase := int((t.warmup + t.measure).Seconds())
	n := 2 * int(t.disk.Seconds())
	idle := 2 * int(leaderIdleWindow.Seconds()) // before each W2 phase of a paros system
	for _, s := range systems {
		if proxyCostOnly(s) {
			n += 2*phase + idle + 3 // W2 ×2; start-up
			continue
		}
		if tlsCostOnly(s) {
			n += 3*phase + idle + 3 // W1, W2 ×2; start-up
			continue
		}
		k := 5 * phase // W1, W2 ×2, W3 ×2
		if _, ok := s.(*parosSys); ok {
			k += 2*phase + readHeavySeconds(t) + idle // the W2 "64 journals" variant, read-heavy
		}
		k += int((t.warmup + t.tail).Seconds()) + 1
		k += int((t.failBefore + t.failAfter).Seconds())
		n += k + 3 // start-up
	}
	return n
}

// tlsCostOnly reports whether s runs only W1 and W2 (the plaintext paros
// variant, there for the TLS-cost comparison).
func tlsCostOnly(s system) bool {
	p, ok := s.(*parosSys)
	return ok && p.tlsCostOnly()
}

// runSystem starts one system, runs every workload against it, stops it.
// A system for the TLS-cost comparison only (tlsCostOnly) runs W1 and W2
// with one writer, and nothing else; the system with proxies
// (proxyCostOnly) W2 with one writer. On a paros system each W2 phase with
// one writer also measures the leader's cost (leaderCost).
func runSystem(ctx context.Context, s system, work string, t timing, pb *progress, profDir string, rep *report) sysResult {
	res := sysResult{Key: s.key(), Title: s.title(), Durability: s.durability(), Phases: map[string]*loadResult{},
		PeakRSSMiB: map[string][]float64{}, CPUCores: map[string]float64{}, DiskBytes: map[string]int64{}}
	dir := filepath.Join(work, s.key())
	_ = os.MkdirAll(dir, 0o755)
	defer os.RemoveAll(dir)
	pb.phase(s.title() + ": starting 3 members")
	t0 := time.Now()
	if err := s.start(ctx, dir); err != nil {
		res.Error = "start: " + err.Error()
		s.stop()
		return res
	}
	res.StartS = time.Since(t0).Seconds()
	pb.add(3)
	defer s.stop()

	type phase struct {
		id, label string
		inflight  int
		batch     int
		open      func() (writer, error)
		profile   bool
	}
	std := func(inflight int) func() (writer, error) {
		return func() (writer, error) { return s.newWriter(ctx, inflight, 5*time.Second) }
	}
	phases := []phase{
		{"w1", "W1 latency: 1 writer", 1, 1, std(1), false},
		{"w2-64", "W2: 64 in flight", w2Low, 1, std(w2Low), false},
		{"w2-1000", "W2: 1,000 in flight", w2High, 1, std(w2High), true},
	}
	costOnly := tlsCostOnly(s) || proxyCostOnly(s)
	if proxyCostOnly(s) {
		phases = phases[1:] // W2 only
	}
	if p, ok := s.(*parosSys); ok && !costOnly {
		// One client.Writer per journal, over the one Client.
		multi := func(inflight int) func() (writer, error) {
			return func() (writer, error) { return p.openWriter(ctx, inflight, parosJournals) }
		}
		phases = append(phases,
			phase{"w2-64-journals", "W2: 64 in flight, 64 journals", w2Low, 1, multi(w2Low), false},
			phase{"w2-1000-journals", "W2: 1,000 in flight, 64 journals", w2High, 1, multi(w2High), false},
		)
	}
	if !costOnly {
		phases = append(phases,
			phase{"w3-1", "W3 batched: 1 × 64 records", 1, w3Batch, std(1), false},
			phase{"w3-16", "W3 batched: 16 × 64 records", w3Inflight, w3Batch, std(w3Inflight), true},
		)
	}
	for _, ph := range phases {
		if ctx.Err() != nil {
			return res
		}
		pb.phase(fmt.Sprintf("%s: %s", s.title(), ph.label))
		p, isParos := s.(*parosSys)
		var probe *leaderProbe
		if isParos && leaderCostPhase(ph.id) {
			probe = p.leaderIdle(ctx)
			pb.add(int(leaderIdleWindow.Seconds()))
		}
		w, err := ph.open()
		if err != nil {
			res.Phases[ph.id] = &loadResult{Inflight: ph.inflight, Batch: ph.batch, FirstError: err.Error()}
			pb.add(int((t.warmup + t.measure).Seconds()))
			continue
		}
		var rss *rssSampler
		if strings.HasPrefix(ph.id, "w2") || strings.HasPrefix(ph.id, "w3") {
			rss = sampleRSS(s.members(), rssInterval)
		}
		cpu0 := membersCPU(s.members())
		disk0 := membersWriteBytes(s.members())
		var profDone chan []memberProfile
		if ph.profile && s.pprofAddr(0) != "" {
			profDone = startProfile(ctx, s, profDir, ph.id, t)
		}
		if probe != nil {
			probe.begin()
		}
		r := runClosed(ctx, w, ph.inflight, ph.batch, t.warmup, t.measure, func() { pb.add(1) })
		w.close()
		res.CPUCores[ph.id] = (membersCPU(s.members()) - cpu0).Seconds() / (t.warmup + t.measure).Seconds()
		if r.Writes > 0 {
			res.DiskBytes[ph.id] = membersWriteBytes(s.members()) - disk0
		}
		if isParos {
			st := p.takeStats()
			res.addWriterStats(ph.id, st)
			if probe != nil {
				res.addLeaderCost(ph.id, probe.end(ctx, st))
			}
		}
		if rss != nil {
			var mib []float64
			for _, b := range rss.finish() {
				mib = append(mib, float64(b)/(1<<20))
			}
			res.PeakRSSMiB[ph.id] = mib
		}
		if profDone != nil {
			for _, mp := range <-profDone {
				if sum := summarizeProfile(s, mp); sum != "" {
					rep.Profiles = append(rep.Profiles, profileSummary{System: s.key(), Phase: ph.id, Top: sum})
				}
			}
		}
		res.Phases[ph.id] = &r
	}
	if ctx.Err() != nil || costOnly {
		return res
	}
	pb.phase(s.title() + ": W4 tail read")
	tr := runTail(ctx, s, w4Rate, w4Readers, t.warmup, t.tail, func() { pb.add(1) })
	res.Tail = &tr
	if p, ok := s.(*parosSys); ok {
		res.addWriterStats("w4", p.takeStats())
		res.ReadHeavy = runReadHeavy(ctx, p, t, pb, profDir, rep, &res)
	}
	pb.phase(s.title() + ": W5 kill -9 the leader")
	fr := runFailover(ctx, s, w5Inflight, t.failBefore, t.failAfter, func() { pb.add(1) })
	res.Failover = &fr
	if p, ok := s.(*parosSys); ok {
		res.addWriterStats("w5", p.takeStats())
	}
	return res
}

// membersWriteBytes sums procWriteBytes over the live members.
func membersWriteBytes(cs []*child) int64 {
	var n int64
	for _, c := range cs {
		if c.alive() {
			n += procWriteBytes(c.cmd.Process.Pid)
		}
	}
	return n
}

func membersCPU(cs []*child) time.Duration {
	var d time.Duration
	for _, c := range cs {
		if c.alive() {
			d += procCPU(c.cmd.Process.Pid)
		}
	}
	return d
}

func hostInfo(root string) hostFacts {
	h := hostFacts{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	// Read-only git queries: which paros was measured.
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output(); err == nil {
		h.ParosCommit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			h.ParosCommit += "+dirty"
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		l, _, _ := strings.Cut(string(b), "\n")
		h.MemTotal = strings.TrimSpace(strings.TrimPrefix(l, "MemTotal:"))
	}
	return h
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// progress is a progress bar on a terminal, or one line per phase
// otherwise (progressbar only when stderr is a TTY, as in paros-sim).
type progress struct {
	bar   *progressbar.ProgressBar
	start time.Time
}

func newProgress(total int) *progress {
	p := &progress{start: time.Now()}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth(),
			progressbar.OptionSetDescription("starting"))
	}
	return p
}

func (p *progress) phase(s string) {
	if p.bar != nil {
		p.bar.Describe(s)
		return
	}
	fmt.Fprintf(os.Stderr, "[%5.0fs] %s\n", time.Since(p.start).Seconds(), s)
}

func (p *progress) add(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
}
