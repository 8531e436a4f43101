package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/client/admin"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/storage/machinerecord"
)

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		var data string
		var portBase, replicas, proxies int
		var verbose, insecure bool
		cmd := &cobra.Command{
			Use:   "dev",
			Short: "start a local three-machine cell with a journal named demo (Ctrl-C stops it)",
			Example: `  paros dev
  paros dev --data ./cell --replicas 1 --proxies 1`,
			Long: `dev starts three paros machines in this process, each with its own data dir and
port on 127.0.0.1, forms them into a cell, creates the journal demo in the
default tenant, and prints the endpoints and example parosctl commands
(docs/reference/cli.md has them all). With --data the cell survives restarts
(the ports must stay the same); the default is a temporary dir.

--replicas N starts N replica machines besides the three (paros serve --role
replica: they learn the journal and serve reads, and never vote), on the
ports after the machines', named in the cell plan. A kept cell keeps the
replicas it was formed with ('parosctl replicas set' changes the list).

--proxies N starts N proxy leaders after the replicas (paros serve --role
proxy: the journal's leader hands them the Phase 2 of its slots; they keep
no store and vote on nothing), named in the cell plan. A kept cell keeps
the proxies it was formed with ('parosctl proxies set' changes the list).

The cell is secure as a deployment is: dev makes a CA in DIR/certs, a
certificate per machine (127.0.0.1, localhost), an admin token and a client
token, and writes DIR/parosctl.env (PAROSCTL_SERVERS, PAROSCTL_CA,
PAROSCTL_TOKEN) for parosctl. --insecure serves plaintext with no
authentication instead.`,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if replicas < 0 || replicas > devReplicasMax {
					return exitError{exitBadConfig, fmt.Errorf("--replicas %d: want 0 to %d", replicas, devReplicasMax)}
				}
				if proxies < 0 || proxies > devProxiesMax {
					return exitError{exitBadConfig, fmt.Errorf("--proxies %d: want 0 to %d", proxies, devProxiesMax)}
				}
				return runDev(data, portBase, devShape{replicas: replicas, proxies: proxies}, verbose, insecure)
			},
		}
		cmd.Flags().StringVar(&data, "data", "", "keep the cell's data here (default: a temporary dir)")
		cmd.Flags().IntVar(&portBase, "port", 7401, "first of the consecutive ports (three, then one per replica, then one per proxy)")
		cmd.Flags().IntVar(&replicas, "replicas", 0, "replica machines to start besides the three (serve reads, never vote)")
		cmd.Flags().IntVar(&proxies, "proxies", 0, "proxy leaders to start besides the three (the leader delegates Phase 2 to them)")
		cmd.Flags().BoolVar(&verbose, "verbose", false, "log every machine's events")
		cmd.Flags().BoolVar(&insecure, "insecure", false, "plaintext, no authentication (experiments only)")
		return cmd
	})
}

// devMachines is how many machines paros dev runs; devReplicasMax bounds
// its replica machines (--replicas), devProxiesMax its proxies (--proxies).
const (
	devMachines    = 3
	devReplicasMax = 4
	devProxiesMax  = 4
)

// devShape is what paros dev runs besides its three machines.
type devShape struct{ replicas, proxies int }

// total is how many processes the cell has: machines, replicas, proxies.
func (s devShape) total() int { return devMachines + s.replicas + s.proxies }

// at is the role, name and subdirectory (of the data dir, and of its certs
// dir) of the cell's i-th process: the machines first, then the replicas,
// then the proxies.
func (s devShape) at(i int) (machine.Role, string, string) {
	switch {
	case i < devMachines:
		return machine.RoleNode, fmt.Sprintf("machine %d", i+1), fmt.Sprintf("machine%d", i+1)
	case i < devMachines+s.replicas:
		k := i - devMachines + 1
		return machine.RoleReplica, fmt.Sprintf("replica %d", k), fmt.Sprintf("replica%d", k)
	}
	k := i - devMachines - s.replicas + 1
	return machine.RoleProxy, fmt.Sprintf("proxy %d", k), fmt.Sprintf("proxy%d", k)
}

// devTokenTTL is the lifetime of the tokens paros dev issues (fresh ones on
// every start).
const devTokenTTL = 30 * 24 * time.Hour

// devSecrets are the credentials of a secure dev cell.
type devSecrets struct {
	nodes       []*security.Node // one per process, in devShape.at order
	caFile      string           // DIR/certs/ca.crt
	admin       string           // every journal: read, write, admin
	client      string           // every journal: read, write
	operatorTLS *tls.Config      // trusts the dev CA
}

func runDev(data string, portBase int, shape devShape, verbose, insecure bool) error {
	temp := data == ""
	if temp {
		dir, err := os.MkdirTemp("", "paros-dev-")
		if err != nil {
			return err
		}
		data = dir
		defer os.RemoveAll(dir)
	}
	logOut := io.Discard
	if verbose {
		logOut = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logOut, nil))
	var sec *devSecrets
	if !insecure {
		var err error
		if sec, err = devCredentials(data, shape); err != nil {
			return err
		}
	}
	var nodes []*node
	var addrs, repAddrs, proxyAddrs []string
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := range shape.total() {
		addr := fmt.Sprintf("127.0.0.1:%d", portBase+i)
		var creds *security.Node
		if sec != nil {
			creds = sec.nodes[i]
		}
		role, name, sub := shape.at(i)
		n, err := startNode(filepath.Join(data, sub), addr, addr, "", role, defaultScrubPace, creds, log.With("machine", name))
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
		switch role {
		case machine.RoleReplica:
			repAddrs = append(repAddrs, addr)
		case machine.RoleProxy:
			proxyAddrs = append(proxyAddrs, addr)
		default:
			addrs = append(addrs, addr)
		}
	}
	access := machine.Access{}
	if sec != nil {
		access = machine.Access{TLS: sec.operatorTLS, Token: sec.admin}
	}
	plan, err := formDevCell(addrs, repAddrs, proxyAddrs, access)
	if err != nil {
		return err
	}
	jref, err := devJournal(addrs, access)
	if err != nil {
		return err
	}
	env := devEnv(strings.Join(append(slices.Clone(addrs), repAddrs...), ","), sec)
	envFile := filepath.Join(data, "parosctl.env")
	if err := os.WriteFile(envFile, []byte(env), 0o600); err != nil {
		return err
	}
	if insecure {
		fmt.Printf("paros dev: %s\n\n", insecureWarning)
	}
	withReplicas := ""
	if shape.replicas > 0 {
		withReplicas = fmt.Sprintf(", %d replica(s)", shape.replicas)
	}
	if shape.proxies > 0 {
		withReplicas += fmt.Sprintf(", %d proxy leader(s)", shape.proxies)
	}
	fmt.Printf("paros dev: a cell of three machines%s is up (data in %s%s)\n\n", withReplicas, data, map[bool]string{true: ", removed on exit", false: ""}[temp])
	for i, a := range addrs {
		fmt.Printf("  machine %d  %s  node %016x\n", i+1, a, nodes[i].m.NodeID())
	}
	for i, a := range repAddrs {
		fmt.Printf("  replica %d  %s  node %016x  (reads only)\n", i+1, a, nodes[devMachines+i].m.NodeID())
	}
	for i, a := range proxyAddrs {
		fmt.Printf("  proxy %d    %s  node %016x  (proxy leader: no client calls)\n", i+1, a, nodes[devMachines+shape.replicas+i].m.NodeID())
	}
	fmt.Printf("\n  cell     %016x\n  journal  %s (in the tenant %s)\n", plan.GetCellId(), jref, client.DefaultTenant)
	if sec != nil {
		fmt.Printf("  tls      on: every machine's certificate is signed by the CA in %s\n", filepath.Dir(sec.caFile))
	} else {
		fmt.Printf("  tls      off (--insecure)\n")
	}
	fmt.Printf("\nTry, in another terminal (the first lines are %s: `. %s` does the same):\n\n", envFile, envFile)
	for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
		fmt.Printf("  %s\n", line)
	}
	fmt.Printf("  go run ./cmd/parosctl write %s hello world\n", jref)
	fmt.Printf("  go run ./cmd/parosctl read %s\n", jref)
	fmt.Printf("  go run ./cmd/parosctl tail -f %s\n", jref)
	fmt.Printf("  go run ./cmd/parosctl journal inspect %s\n", jref)
	fmt.Printf("  go run ./cmd/parosctl journal create orders\n")
	fmt.Printf("  go run ./cmd/parosctl journal list -o table\n\n")
	fmt.Println("Ctrl-C stops the cell.")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	// The first machine to stop on its own ends the cell.
	stopped := make(chan *node, len(nodes))
	for _, n := range nodes {
		go func() {
			<-n.m.Done()
			stopped <- n
		}()
	}
	select {
	case <-sig:
		fmt.Println("\nparos dev: stopping")
		return nil
	case n := <-stopped:
		return classify(n.m.Err())
	}
}

// devEnv is the text of parosctl.env: shell lines pointing parosctl at the
// cell (sec nil: the insecure cell).
func devEnv(servers string, sec *devSecrets) string {
	var b strings.Builder
	fmt.Fprintf(&b, "export PAROSCTL_SERVERS=%s\n", servers)
	if sec == nil {
		fmt.Fprintf(&b, "export PAROSCTL_INSECURE=1\n")
		fmt.Fprintf(&b, "unset PAROSCTL_CA PAROSCTL_TOKEN\n")
		return b.String()
	}
	fmt.Fprintf(&b, "unset PAROSCTL_INSECURE\n")
	fmt.Fprintf(&b, "export PAROSCTL_CA=%s\n", sec.caFile)
	fmt.Fprintf(&b, "export PAROSCTL_TOKEN=%s\n", sec.admin)
	fmt.Fprintf(&b, "# PAROSCTL_TOKEN is an admin token (read,write,admin on every journal); a client token (read,write): %s\n", sec.client)
	return b.String()
}

// devCredentials makes (or, in a kept dir, reuses) the dev cell's CA in
// data/certs, a certificate per machine in data/certs/machineN, per
// replica in data/certs/replicaN and per proxy in data/certs/proxyN
// (127.0.0.1, localhost) and two fresh tokens. A machine whose data dir already holds a record (an earlier
// --insecure run) gets a certificate naming the record's node id, so it
// keeps its identity.
func devCredentials(data string, shape devShape) (*devSecrets, error) {
	certs := filepath.Join(data, "certs")
	if _, err := os.Stat(filepath.Join(certs, security.CACertFile)); errors.Is(err, os.ErrNotExist) {
		ca, err := security.NewCA("dev")
		if err != nil {
			return nil, err
		}
		if err := ca.WriteCA(certs); err != nil {
			return nil, err
		}
	}
	sec := &devSecrets{caFile: filepath.Join(certs, security.CACertFile)}
	for i := range shape.total() {
		_, _, sub := shape.at(i)
		dir, dataDir := filepath.Join(certs, sub), filepath.Join(data, sub)
		if _, err := os.Stat(filepath.Join(dir, security.NodeCertFile)); errors.Is(err, os.ErrNotExist) {
			id := security.RandomNodeID()
			if rec, err := machinerecord.Load(vfs.Default, dataDir); err == nil {
				id = rec.NodeID
			}
			if _, _, err := issueNode(certs, dir, id, []string{"127.0.0.1", "localhost"}); err != nil {
				return nil, err
			}
		}
		n, err := security.LoadNode(dir)
		if err != nil {
			return nil, err
		}
		sec.nodes = append(sec.nodes, n)
	}
	var err error
	if sec.admin, err = issueToken(certs, "paros dev admin", security.Scope{Ops: security.OpRead | security.OpWrite | security.OpAdmin}, devTokenTTL); err != nil {
		return nil, err
	}
	if sec.client, err = issueToken(certs, "paros dev client", security.Scope{Ops: security.OpRead | security.OpWrite}, devTokenTTL); err != nil {
		return nil, err
	}
	if sec.operatorTLS, err = security.ClientConfigFile(sec.caFile); err != nil {
		return nil, err
	}
	return sec, nil
}

// formDevCell runs cell init over the machines at addrs with the replicas
// at replicas and the proxies at proxies (it resumes a formed cell: the
// decree adopts the plan the machines already voted for).
func formDevCell(addrs, replicas, proxies []string, access machine.Access) (*pb.CellPlan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A replica serves the journals of the cell plan only, so a cell with
	// replicas also gets one unnamed journal in its plan for them to serve.
	journals := uint32(0)
	if len(replicas) > 0 {
		journals = 1
	}
	plan, err := machine.InitCellWith(ctx, addrs[0], &pb.CellInitRequest{Members: addrs, Replicas: replicas, Proxies: proxies, Journals: journals}, access)
	if err != nil {
		return nil, exitError{exitInfra, err}
	}
	return plan, nil
}

// devJournalName is the journal paros dev creates by name.
const devJournalName = "demo"

// devJournal creates the journal named demo in the default tenant (a kept
// cell already has it) through client/admin, as any operator's tool would.
func devJournal(addrs []string, access machine.Access) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := []client.Option{client.WithInsecure()}
	if access.TLS != nil {
		opts = []client.Option{client.WithTLS(access.TLS), client.WithToken(access.Token)}
	}
	c, err := client.Dial(ctx, addrs, opts...)
	if err != nil {
		return "", exitError{exitInfra, err}
	}
	defer c.Close()
	if _, err := admin.New(c).CreateJournal(ctx, devJournalName); err != nil && !errors.Is(err, admin.ErrNameTaken) {
		return "", exitError{exitInfra, fmt.Errorf("create the journal %s: %w", devJournalName, err)}
	}
	return devJournalName, nil
}
