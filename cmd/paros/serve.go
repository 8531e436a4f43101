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

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Exit codes of `paros serve` (reference design §4.7).
const (
	exitClean        = 0
	exitInfra        = 1
	exitBadConfig    = 2
	exitStorageFault = 75 // restart me
	exitBootRefused  = 78 // do not restart: amnesia, lost identity, edited configuration
)

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

func startNode(dataDir, listen, advertise, metricsAddr string, log *slog.Logger) (*node, error) {
	if dataDir == "" || listen == "" {
		return nil, exitError{exitBadConfig, errors.New("--data and --listen are required")}
	}
	lis, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, exitError{exitBadConfig, err}
	}
	if advertise == "" {
		advertise = lis.Addr().String()
	}
	metrics := runtime.NewMetrics(nil)
	tun := host.Production()
	m, err := machine.Open(machine.Config{DataDir: dataDir, Advertise: advertise, Tunables: tun, Logger: log, Metrics: metrics})
	if err != nil {
		lis.Close()
		return nil, classify(err)
	}
	gs := grpc.NewServer(runtime.ServerOptions()...)
	m.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	n := &node{m: m, gs: gs, lis: lis}
	if metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		n.http = &http.Server{Addr: metricsAddr, Handler: mux}
		go func() { _ = n.http.ListenAndServe() }()
	}
	log.Info("listening", "addr", lis.Addr().String(), "advertise", advertise, "node", fmt.Sprintf("%016x", m.NodeID()))
	return n, nil
}

func (n *node) stop() {
	n.gs.Stop()
	if n.http != nil {
		_ = n.http.Shutdown(context.Background())
	}
	_ = n.m.Close()
}

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var data, listen, advertise, metricsAddr, pprofAddr string
		cmd := &cobra.Command{
			Use:   "serve",
			Short: "run one paros machine",
			Long: `serve runs one machine from its data dir. On the first start in an empty dir it
mints a node id and waits to be formed into a cell (parosctl init). Every later
start is an existing member: a missing store is refused as amnesia (exit 78).`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				log := slog.New(slog.NewTextHandler(os.Stderr, nil))
				n, err := startNode(data, listen, advertise, metricsAddr, log)
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
