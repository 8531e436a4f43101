package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Exit codes of `paros serve`, so a supervisor knows whether to restart it
// (docs/design/service.md).
const (
	exitClean        = 0
	exitInfra        = 1
	exitBadConfig    = 2
	exitStorageFault = 75 // restart me
	exitBootRefused  = 78 // do not restart: amnesia, lost identity, edited configuration, another node's certificate
)

// insecureWarning is logged (and printed by dev) when a machine serves
// without credentials.
const insecureWarning = "INSECURE: no TLS, no authentication: anyone who reaches this port can write, forge consensus messages and read every journal"

type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) ExitCode() int { return e.code }
func (e exitError) Unwrap() error { return e.err }

// classify maps a start or run error to its exit code.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrAmnesia), errors.Is(err, storage.ErrConfigMismatch),
		errors.Is(err, storage.ErrFormatted), errors.Is(err, machine.ErrLostIdentity), errors.Is(err, storage.ErrBadMarker),
		errors.Is(err, machine.ErrCertificateMismatch), errors.Is(err, machine.ErrRoleMismatch),
		errors.Is(err, machinerecord.ErrDamaged), errors.Is(err, machinerecord.ErrInvalid):
		// A damaged or edited machine record is a lost identity: restarting
		// would only meet it again.
		return exitError{exitBootRefused, fmt.Errorf("boot refused (do not restart): %w", err)}
	case errors.Is(err, storage.ErrCorruption), errors.Is(err, storage.ErrFailed), errors.As(err, new(*storage.IOError)):
		return exitError{exitStorageFault, fmt.Errorf("storage fault: %w", err)}
	case errors.Is(err, host.ErrStopped):
		return exitError{exitStorageFault, err}
	}
	return exitError{exitInfra, err}
}

// node is one running machine with its gRPC server.
type node struct {
	m    *machine.Machine
	gs   *grpc.Server
	lis  net.Listener
	http *http.Server
}

// loadCredentials reads a machine's credentials from the --tls dir, or
// returns nil for --insecure; neither, or both, is a bad configuration.
func loadCredentials(tlsDir string, insecure bool) (*security.Node, error) {
	switch {
	case tlsDir != "" && insecure:
		return nil, exitError{exitBadConfig, errors.New("--tls and --insecure exclude each other")}
	case insecure:
		return nil, nil
	case tlsDir == "":
		return nil, exitError{exitBadConfig, errors.New("no credentials: pass --tls DIR (ca.crt, node.crt and node.key, " +
			"from `paros cert node`), or --insecure to serve plaintext with no authentication")}
	}
	n, err := security.LoadNode(tlsDir)
	if err != nil {
		return nil, exitError{exitBadConfig, fmt.Errorf("--tls %s: %w", tlsDir, err)}
	}
	return n, nil
}

// scrubPace is the background scrubber's pace as serve's flags give it in
// wall time: the full-pass bound and the rate limit between two pages.
type scrubPace struct{ pass, interval time.Duration }

// defaultScrubPace is the production pace (serve's defaults, and dev's):
// every retained chosen record is read back from disk and compared with its
// peers' copies at least once an hour, a page at most every 100 ms.
var defaultScrubPace = scrubPace{pass: time.Hour, interval: 100 * time.Millisecond}

// apply sets the pace on t in whole ticks of t.TickMs: the pass bound
// rounded down (a bound is kept), the interval rounded up (a rate limit is
// kept). A pass bound below paxos.ScrubPassTicksMin ticks, or an interval
// below one tick, is a bad configuration.
func (p scrubPace) apply(t *host.Tunables) error {
	tick := time.Duration(t.TickMs) * time.Millisecond
	passTicks := int(p.pass / tick)
	if passTicks < paxos.ScrubPassTicksMin {
		return exitError{exitBadConfig, fmt.Errorf("--scrub-pass %v is %d ticks of %v: the floor is %d ticks (%v)",
			p.pass, passTicks, tick, paxos.ScrubPassTicksMin, paxos.ScrubPassTicksMin*tick)}
	}
	if p.interval < tick {
		return exitError{exitBadConfig, fmt.Errorf("--scrub-interval %v is below one tick (%v)", p.interval, tick)}
	}
	t.ScrubPassTicks = passTicks
	t.ScrubIntervalTicks = int((p.interval + tick - 1) / tick)
	return nil
}

// debugHandlers, when set, adds test-only handlers to the admin HTTP mux of
// machine m (--metrics). Only builds with -tags parostesthooks set it
// (damage_hook.go): a production binary serves no such endpoint.
var debugHandlers func(mux *http.ServeMux, m *machine.Machine, log *slog.Logger)

// startNode opens a machine of the given role and serves it; creds nil is
// the insecure mode.
func startNode(dataDir, listen, advertise, metricsAddr string, role machine.Role, pace scrubPace, creds *security.Node, log *slog.Logger) (*node, error) {
	if dataDir == "" || listen == "" {
		return nil, exitError{exitBadConfig, errors.New("--data and --listen are required")}
	}
	tun := host.Production()
	if err := pace.apply(&tun); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, exitError{exitBadConfig, err}
	}
	if advertise == "" {
		advertise = lis.Addr().String()
	}
	metrics := runtime.NewMetrics(nil)
	if creds == nil {
		log.Warn(insecureWarning, "addr", lis.Addr().String())
	}
	m, err := machine.Open(machine.Config{DataDir: dataDir, Advertise: advertise, Tunables: tun, Logger: log, Metrics: metrics, TLS: creds,
		Role: role})
	if err != nil {
		lis.Close()
		return nil, classify(err)
	}
	gs := grpc.NewServer(m.ServerOptions()...)
	m.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	n := &node{m: m, gs: gs, lis: lis}
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		// Go's profiles on the same admin address (as etcd serves them):
		// what a process spends its CPU and memory on, measured in place.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		if debugHandlers != nil {
			debugHandlers(mux, m, log)
		}
		n.http = &http.Server{Addr: metricsAddr, Handler: mux}
		go func() { _ = n.http.ListenAndServe() }()
	}
	log.Info("listening", "addr", lis.Addr().String(), "advertise", advertise, "node", fmt.Sprintf("%016x", m.NodeID()), "tls", creds != nil,
		"role", role.String())
	return n, nil
}

// handOffWait bounds the graceful shutdown's handoff.
const handOffWait = 2 * time.Second

func (n *node) stop() {
	n.gs.Stop()
	if n.http != nil {
		_ = n.http.Shutdown(context.Background())
	}
	_ = n.m.Close()
}

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var data, listen, advertise, metricsAddr, pprofAddr, tlsDir, roleName string
		var insecure bool
		pace := defaultScrubPace
		cmd := &cobra.Command{
			Use:   "serve --data DIR --listen ADDR (--tls DIR | --insecure) [--role node|replica|proxy]",
			Short: "run one paros machine",
			Example: `  paros serve --data /var/lib/paros --listen 10.0.0.1:7400 --tls ./m1
  paros serve --data /var/lib/paros --listen 10.0.0.4:7400 --tls ./m4 --role replica
  paros serve --data ./d1 --listen 127.0.0.1:7400 --insecure   # experiments only`,
			Long: `serve runs one machine from its data dir. On the first start in an empty dir it
takes its node id from its certificate and waits to be formed into a cell
(parosctl cell init). Every later start is an existing member: a missing store is
refused as amnesia, a certificate naming another node as a mismatch (exit 78).

--role replica runs a replica machine: it learns every journal of the cell
from the leaders' pushes, keeps it on disk like a node (same store, boot
checks and refusals), serves reads, and never votes. It answers a write,
truncate or fence claim with a redirect to the leader, and refuses
reconfigure and retire. Replicas are named when the cell is formed
(parosctl cell init --replicas) or later (parosctl replicas set).

--role proxy runs a proxy leader: each journal's leader hands it the Phase
2 of its slots (slot s to the s % N-th proxy), and it fans the Accepts out
to the acceptors, tallies their answers and announces the decision, so the
leader sends one message per round and receives one. It keeps no store
(its data dir holds its identity alone), votes on nothing, and answers
every client call as for a journal it does not serve. A leader takes back
the rounds of a proxy that went silent and runs them itself. Proxies are
named when the cell is formed (parosctl cell init --proxies) or later
(parosctl proxies set).

A machine must be restarted with the role it was formed with (else exit
78). The default role is node: an acceptor machine.

SIGTERM (or Ctrl-C) is a graceful shutdown: every journal the machine leads
is first handed to its most caught-up live follower, which continues at the
same ballot with no election (within 2s; past that the cell elects). A
rolling restart of the cell, one machine at a time, so moves its leaders.

--tls DIR holds ca.crt, node.crt and node.key (paros cert node): the machine
serves TLS 1.3, checks every client's token and every peer's certificate, and
dials its peers over mutual TLS. --insecure serves plaintext and authenticates
nobody; one of the two is required.

In the background each journal's leader scrubs: it pages through the chosen
records the journal still retains, every member reads its own copy back from
disk, repairs a damaged one (from memory, else from a peer's chosen copy) and
answers a hash the leader compares. --scrub-pass bounds a full pass (default
1h; at least 100 ticks, 5s at the 50 ms tick); --scrub-interval is the rate
limit between two pages (default 100ms; at least one tick), which wins over
the bound when the journal is large: the pass then overruns and says so
(paros_scrub_pass_overruns on /metrics).`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				log := slog.New(slog.NewTextHandler(os.Stderr, nil))
				creds, err := loadCredentials(tlsDir, insecure)
				if err != nil {
					return err
				}
				role, err := machine.ParseRole(roleName)
				if err != nil {
					return exitError{exitBadConfig, fmt.Errorf("--role: %w", err)}
				}
				n, err := startNode(data, listen, advertise, metricsAddr, role, pace, creds, log)
				if err != nil {
					return err
				}
				if pprofAddr != "" {
					servePprof(pprofAddr, log)
				}
				sig := make(chan os.Signal, 1)
				signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
				select {
				case <-sig:
					// A graceful shutdown: the journals this machine leads
					// go to live followers first, so the cell elects no
					// one. Past the bound an election does the rest.
					ctx, cancel := context.WithTimeout(context.Background(), handOffWait)
					handed, err := n.m.HandOff(ctx)
					cancel()
					log.Info("shutting down", "handed_off", handed, "err", err)
					n.stop()
					return nil
				case <-n.m.Done():
					cause := n.m.Err()
					n.stop()
					return classify(cause)
				}
			},
		}
		cmd.Flags().StringVar(&data, "data", "", "data directory")
		cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:7400", "gRPC listen address")
		cmd.Flags().StringVar(&advertise, "advertise", "", "address peers and clients use (default: the listen address)")
		cmd.Flags().StringVar(&metricsAddr, "metrics", "", "admin HTTP address serving /metrics (empty: off)")
		cmd.Flags().StringVar(&roleName, "role", "node", "node (an acceptor machine), replica (a learner that serves reads; parosctl replicas set) or proxy (a proxy leader; parosctl proxies set)")
		cmd.Flags().StringVar(&tlsDir, "tls", "", "credentials dir: ca.crt, node.crt, node.key (paros cert node)")
		cmd.Flags().BoolVar(&insecure, "insecure", false, "serve plaintext with no authentication (experiments only)")
		cmd.Flags().DurationVar(&pace.pass, "scrub-pass", pace.pass, "bound on one full scrub pass over the retained records (at least 100 ticks)")
		cmd.Flags().DurationVar(&pace.interval, "scrub-interval", pace.interval, "least time between two scrub pages (at least one tick)")
		cmd.Flags().StringVar(&pprofAddr, "pprof", "", "HTTP address serving net/http/pprof (empty: off; for bench/)")
		_ = cmd.Flags().MarkHidden("pprof")
		return cmd
	})
}

// servePprof serves net/http/pprof on addr (the hidden --pprof flag, used by
// the benchmark harness in bench/ to profile a running machine).
func servePprof(addr string, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() {
		if err := http.ListenAndServe(addr, mux); err != nil {
			log.Warn("pprof server stopped", "addr", addr, "err", err)
		}
	}()
}
