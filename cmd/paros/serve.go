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
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/storage"
	"github.com/parosdb/paros/storage/machinerecord"
)

// Exit codes of `paros serve` (reference design §4.7).
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
		errors.Is(err, machine.ErrCertificateMismatch),
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

// startNode opens a machine and serves it; creds nil is the insecure mode.
func startNode(dataDir, listen, advertise, metricsAddr string, creds *security.Node, log *slog.Logger) (*node, error) {
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
	if creds == nil {
		log.Warn(insecureWarning, "addr", lis.Addr().String())
	}
	m, err := machine.Open(machine.Config{DataDir: dataDir, Advertise: advertise, Tunables: tun, Logger: log, Metrics: metrics, TLS: creds})
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
		n.http = &http.Server{Addr: metricsAddr, Handler: mux}
		go func() { _ = n.http.ListenAndServe() }()
	}
	log.Info("listening", "addr", lis.Addr().String(), "advertise", advertise, "node", fmt.Sprintf("%016x", m.NodeID()), "tls", creds != nil)
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
		var data, listen, advertise, metricsAddr, pprofAddr, tlsDir string
		var insecure bool
		cmd := &cobra.Command{
			Use:   "serve --data DIR --listen ADDR (--tls DIR | --insecure)",
			Short: "run one paros machine",
			Long: `serve runs one machine from its data dir. On the first start in an empty dir it
takes its node id from its certificate and waits to be formed into a cell
(parosctl init). Every later start is an existing member: a missing store is
refused as amnesia, a certificate naming another node as a mismatch (exit 78).

--tls DIR holds ca.crt, node.crt and node.key (paros cert node): the machine
serves TLS 1.3, checks every client's token and every peer's certificate, and
dials its peers over mutual TLS. --insecure serves plaintext and authenticates
nobody; one of the two is required.`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				log := slog.New(slog.NewTextHandler(os.Stderr, nil))
				creds, err := loadCredentials(tlsDir, insecure)
				if err != nil {
					return err
				}
				n, err := startNode(data, listen, advertise, metricsAddr, creds, log)
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
		cmd.Flags().StringVar(&tlsDir, "tls", "", "credentials dir: ca.crt, node.crt, node.key (paros cert node)")
		cmd.Flags().BoolVar(&insecure, "insecure", false, "serve plaintext with no authentication (experiments only)")
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
