// Package cli is the `paros mesh` command tree. Every command takes
// --format text|json. `serve` runs a runtime for the checkout it is started
// in; every other command but `identity` talks to that runtime's local API
// on loopback.
//
// Exit codes: 0 success; 1 any error; 2 a usage error; 10 a refused claim
// (naming the holder) or a failed `verify`.
package cli

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/parosdb/paros/mesh"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	ExitError    = 1
	ExitUsage    = 2
	ExitConflict = 10
)

// ExitCoder is an error that carries the process exit code. A Quiet one
// has already been reported to the user.
type ExitCoder struct {
	Code  int
	Err   error
	Quiet bool
}

func (e *ExitCoder) Error() string {
	if e.Quiet {
		return ""
	}
	return e.Err.Error()
}

func (e *ExitCoder) Unwrap() error { return e.Err }

// ExitCode returns the process exit code.
func (e *ExitCoder) ExitCode() int { return e.Code }

// configRel is where a checkout keeps its mesh configuration.
const configRel = ".paros/mesh.toml"

type options struct {
	config   string
	format   string
	stateDir string
}

// Command returns the `mesh` command with every subcommand.
func Command() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "mesh",
		Short: "Coordinate runtimes on one repository: sessions, claims, handovers, reviews",
		Long: `The mesh is a signed, leaderless coordination journal. Each runtime (one per
checkout) appends signed events to its own stream; peers replicate streams by
comparing marks and fold the same events into the same state.

Start a runtime in a checkout with "paros mesh serve", then use the other
commands from anywhere inside that checkout. Configuration lives in
.paros/mesh.toml (optional; unknown keys are refused).`,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if o.format != "text" && o.format != "json" {
				return usageErr(fmt.Errorf("--format must be text or json, not %q", o.format))
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.config, "config", "", "configuration file (default: .paros/mesh.toml in this checkout or above)")
	pf.StringVar(&o.format, "format", "text", "output format: text or json")
	pf.StringVar(&o.stateDir, "state-dir", "", "mesh state directory (default: $XDG_STATE_HOME/paros/mesh)")
	cmd.AddCommand(
		serveCmd(o), identityCmd(o), statusCmd(o), peersCmd(o), stateCmd(o), sessionCmd(o),
		claimCmd(o), releaseCmd(o), handoverCmd(o), reviewCmd(o), verifyCmd(o),
	)
	return cmd
}

func usageErr(err error) error { return &ExitCoder{Code: ExitUsage, Err: err} }

// usageArgs makes an argument check's failure a usage error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageErr(err)
		}
		return nil
	}
}

// env is what a command resolves before it acts.
type env struct {
	o         *options
	out       io.Writer
	checkout  string // absolute
	cfg       mesh.FileConfig
	cfgPath   string
	cfgFound  bool
	stateDir  string
	runtimeID string
}

func (o *options) resolve(cmd *cobra.Command) (*env, error) {
	e := &env{o: o, out: cmd.OutOrStdout()}
	if o.config != "" {
		p, err := filepath.Abs(o.config)
		if err != nil {
			return nil, err
		}
		e.cfgPath = p
		dir := filepath.Dir(p)
		if filepath.Base(dir) == ".paros" {
			dir = filepath.Dir(dir)
		}
		e.checkout = dir
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		e.checkout, e.cfgPath = findCheckout(wd)
	}
	cfg, found, err := mesh.LoadConfig(e.cfgPath)
	if err != nil {
		return nil, err
	}
	if o.config != "" && !found {
		return nil, fmt.Errorf("configuration %s: %w", e.cfgPath, fs.ErrNotExist)
	}
	e.cfg, e.cfgFound = cfg, found
	e.stateDir = o.stateDir
	if e.stateDir == "" {
		if e.stateDir, err = mesh.StateDir(); err != nil {
			return nil, err
		}
	}
	e.runtimeID = mesh.RuntimeOf(e.checkout)
	return e, nil
}

// findCheckout walks up from wd to a directory holding .paros/mesh.toml;
// failing that, the checkout is git's top level, or wd itself.
func findCheckout(wd string) (checkout, cfgPath string) {
	for dir := wd; ; {
		p := filepath.Join(dir, configRel)
		if _, err := os.Stat(p); err == nil {
			return dir, p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	top := wd
	if out, err := exec.Command("git", "-C", wd, "rev-parse", "--show-toplevel").Output(); err == nil {
		if s := strings.TrimSpace(string(out)); s != "" {
			top = s
		}
	}
	return top, filepath.Join(top, configRel)
}

// repository returns the repository id and how it was found.
func (e *env) repository() (id, how string, err error) {
	if e.cfg.Repository != "" {
		return mesh.RepositoryDeclared(e.cfg.Repository), fmt.Sprintf("declared %q", e.cfg.Repository), nil
	}
	out, err := exec.Command("git", "-C", e.checkout, "rev-list", "--max-parents=0", "HEAD").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s is not a git checkout with commits; declare repository = \"NAME\" in %s", e.checkout, e.cfgPath)
	}
	id, err = mesh.RepositoryFromRoots(strings.Fields(string(out)))
	if err != nil {
		return "", "", err
	}
	return id, "from the git root commits", nil
}

// runtimeFile records where this checkout's runtime serves.
type runtimeFile struct {
	Endpoint string        `json:"endpoint"`
	PID      int           `json:"pid"`
	Stream   mesh.StreamID `json:"stream"`
	Checkout string        `json:"checkout"`
}

func (e *env) runtimeFilePath() string {
	return filepath.Join(e.stateDir, "runtimes", e.runtimeID+".json")
}

func (e *env) journalPath() string {
	return filepath.Join(e.stateDir, "journals", e.runtimeID+".jsonl")
}

// client returns an API client of this checkout's serving runtime.
func (e *env) client() *mesh.APIClient {
	if data, err := os.ReadFile(e.runtimeFilePath()); err == nil {
		var rf runtimeFile
		if json.Unmarshal(data, &rf) == nil && rf.Endpoint != "" {
			return mesh.NewAPIClient(rf.Endpoint)
		}
	}
	return mesh.NewAPIClient(e.cfg.Listen)
}

// emit prints v as JSON, or calls text.
func (e *env) emit(v any, text func(w io.Writer)) error {
	if e.o.format == "json" {
		enc := json.NewEncoder(e.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(e.out, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
}

// call runs one local API call.
func (e *env) call(method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.client().Do(ctx, method, path, in, out)
}

func serveCmd(o *options) *cobra.Command {
	var listen, name string
	var seeds []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run this checkout's runtime: serve peers and the local API, beat, replicate, compact",
		Example: `  paros mesh serve --listen 127.0.0.1:0 --name laptop
  paros mesh serve --listen 10.0.0.7:7600 --seed http://10.0.0.8:7600`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := o.resolve(cmd)
			if err != nil {
				return err
			}
			if listen != "" {
				e.cfg.Listen = listen
			}
			if name != "" {
				e.cfg.Name = name
			}
			e.cfg.Seeds = append(e.cfg.Seeds, seeds...)
			if err := e.cfg.Validate(); err != nil {
				return usageErr(err)
			}
			return serve(cmd, e)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on, host:port (port 0: any free port)")
	cmd.Flags().StringArrayVar(&seeds, "seed", nil, "peer endpoint to dial, http://host:port (repeatable)")
	cmd.Flags().StringVar(&name, "name", "", "name shown to peers")
	return cmd
}

func serve(cmd *cobra.Command, e *env) error {
	key, created, err := mesh.LoadOrCreateKey(e.stateDir, rand.Reader)
	if err != nil {
		return err
	}
	repo, how, err := e.repository()
	if err != nil {
		return err
	}
	policy, _ := mesh.ParseTrustPolicy(e.cfg.Trust.Policy)
	trust, err := mesh.NewTrust(policy, key.PK, e.cfg.Trust.Allow)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var store *mesh.FileStore
	cfg := mesh.Config{
		Key: key, Runtime: e.runtimeID, Repo: repo, Name: e.cfg.Name, Version: "paros",
		Heartbeat: e.cfg.Heartbeat(), Expiry: e.cfg.Expiry(), Trust: trust,
		Endpoints: []string{addr}, Seeds: e.cfg.NormalizedSeeds(),
		Clock: mesh.SystemClock(), Rand: rand.Reader, Transport: mesh.NewHTTPTransport(),
	}
	if e.cfg.PersistOn() {
		store = &mesh.FileStore{Path: e.journalPath()}
		cfg.Store = store
	}
	rt, err := mesh.New(cfg)
	if err != nil {
		return err
	}
	reloaded := 0
	if store != nil {
		lines, err := store.Load()
		if err != nil {
			return err
		}
		reloaded = rt.Reload(lines).Accepted
	}
	rf := runtimeFile{Endpoint: "http://" + addr, PID: os.Getpid(), Stream: rt.Stream(), Checkout: e.checkout}
	if err := writeRuntimeFile(e.runtimeFilePath(), rf); err != nil {
		return err
	}
	defer removeRuntimeFile(e.runtimeFilePath(), rf.PID)

	stderr := cmd.ErrOrStderr()
	if created {
		fmt.Fprintf(stderr, "paros mesh: created identity %s (node %s)\n", mesh.KeyPath(e.stateDir), key.Node)
	}
	fmt.Fprintf(stderr, "paros mesh: runtime %s serving at http://%s\n", rt.RuntimeKey(), addr)
	fmt.Fprintf(stderr, "paros mesh: stream %s, repository %s (%s), %d events reloaded\n", rt.Stream(), repo, how, reloaded)
	if len(cfg.Seeds) > 0 {
		fmt.Fprintf(stderr, "paros mesh: dialing %s\n", strings.Join(cfg.Seeds, ", "))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = mesh.Serve(ctx, rt, ln, log)
	fmt.Fprintln(stderr, "paros mesh: stopped")
	return err
}

func writeRuntimeFile(path string, rf runtimeFile) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, _ := json.Marshal(rf)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func removeRuntimeFile(path string, pid int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var rf runtimeFile
	if json.Unmarshal(data, &rf) == nil && rf.PID == pid {
		os.Remove(path)
	}
}

// silentConflict reports a refused claim and returns exit code 10.
func (e *env) silentConflict(cmd *cobra.Command, ce *mesh.ConflictError, scope []string) error {
	if e.o.format == "json" {
		_ = e.emit(map[string]any{"error": mesh.CodeClaimConflict, "conflicts": ce.Conflicts}, nil)
	} else {
		w := cmd.ErrOrStderr()
		for _, c := range ce.Conflicts {
			fmt.Fprintf(w, "claim refused: %s meets claim %s held by session %s on %s\n",
				strings.Join(scope, " "), c.Key, c.Session, strings.Join(c.Scope, " "))
		}
	}
	return &ExitCoder{Code: ExitConflict, Err: ce, Quiet: true}
}

// IsConflict reports whether err is a refused claim.
func IsConflict(err error) bool { return errors.Is(err, mesh.ErrConflict) }
