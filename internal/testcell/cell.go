// Package testcell starts a real paros cell inside one process, for tests
// and for the load command: N machines (machine.Open over Pebble stores in
// a caller's directory), each with a gRPC server on 127.0.0.1:0 carrying
// every service (machine.Register), formed into a cell through the
// Machine.CellInit RPC exactly as `parosctl cell init` forms one, and as many
// replica and proxy machines as asked for (started as `paros serve --role
// replica` and `--role proxy` are, named in the plan). Nothing is faked: the clients
// under test talk gRPC to the same code `paros serve` runs.
//
// It also has Proxy, a TCP forwarder that a test can cut and heal, and
// that can drop the connection right after forwarding a request (so the
// request may land while its answer is lost).
//
// Pool shares cells among a package's tests and examples: it hands each
// caller a journal nobody else got, and starts another cell when the
// journals run out.
//
// A cell is plaintext by default. Options.Secure serves it as `paros serve
// --tls` does: a CA, a certificate per machine and an admin token are made
// in the cell's directory, the machines serve TLS with authentication and
// dial each other over mutual TLS, and Cell.ClientOptions says how a client
// gets in.
//
// The package imports no test-only package, so commands (cmd/paros-load)
// can use it; callers pass the directory (t.TempDir() in a test), except
// to a Pool, which makes a temporary one and removes it on Close.
package testcell

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/client"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/machine"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
	"github.com/parosdb/paros/wire"
)

// Bounds of a test cell.
const (
	// NodesMax bounds the machines of one cell; ReplicasMax its replica
	// machines among them.
	NodesMax    = 9
	ReplicasMax = 4
	// pollEvery is the period of every wait in this package.
	pollEvery = 10 * time.Millisecond
)

// Options shape a cell. The zero value is three machines, one journal,
// FastTunables and no logs.
type Options struct {
	Nodes    int
	Journals int
	// Replicas is how many replica machines the cell has besides its Nodes
	// (default 0): the last of Cell.Nodes, with Node.Replica set.
	Replicas int
	// Proxies is how many proxy machines the cell has besides its Nodes
	// and Replicas (default 0): the last of Cell.Nodes, with Node.Proxy
	// set, started as `paros serve --role proxy` is and named in the plan.
	Proxies int
	// Tunables of every machine (zero: FastTunables).
	Tunables host.Tunables
	// Logger receives every machine's log (nil: discarded).
	Logger *slog.Logger
	// Secure serves the cell with TLS and authentication: a CA in
	// DIR/pki/ca, each machine's credentials in DIR/pki/mN, an admin token
	// (every journal: read, write, admin). False serves plaintext, as
	// `paros serve --insecure`.
	Secure bool
}

// tokenTTL is the lifetime of a secure cell's admin token.
const tokenTTL = 24 * time.Hour

// FastTunables are the production knobs with a 20 ms tick and a 25-tick
// election base: a leader beats every 40 ms, a follower campaigns after
// 0.5–1 s of silence (long enough that a loaded test machine does not
// trigger elections of its own), and a parked call gives up after 2 s.
func FastTunables() host.Tunables {
	t := host.Production()
	t.TickMs = 20
	t.ElectionTicks = 25
	return t
}

// Cell is a running in-process cell.
type Cell struct {
	Nodes []*Node
	// Plan is the cell plan the decree chose.
	Plan *pb.CellPlan
	// Journals are the plan's journals.
	Journals []journal.ID

	// A secure cell's PKI (zero when plaintext): the CA with its key (to
	// issue more certificates and tokens), the path of ca.crt, and an
	// admin token.
	CA     *security.CA
	CAFile string
	Token  string

	opts Options
	dir  string
}

// Node is one machine of a Cell with its gRPC server.
type Node struct {
	// Dir is the machine's data dir, Addr its gRPC address (listen and
	// advertise).
	Dir, Addr string
	// Replica: the machine runs as a replica (machine.RoleReplica);
	// Proxy: as a proxy leader (machine.RoleProxy).
	Replica bool
	Proxy   bool
	// Metrics are the machine's Prometheus metrics (they survive Restart).
	Metrics *runtime.Metrics
	// TLS is the machine's credentials in a secure cell (nil: plaintext),
	// read from TLSDir (ca.crt, node.crt, node.key).
	TLS    *security.Node
	TLSDir string

	mu      sync.Mutex
	machine *machine.Machine // nil while stopped
	gs      *grpc.Server
	calls   map[string]int64 // gRPC full method -> calls received
}

// Start opens opts.Nodes machines under dir (one subdirectory each), serves
// each on 127.0.0.1:0 and forms them into a cell with opts.Journals
// journals. It returns once the cell is formed; the journals elect their
// leaders on their own (WaitLeader waits for one).
func Start(ctx context.Context, dir string, opts Options) (*Cell, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Journals == 0 {
		opts.Journals = 1
	}
	if opts.Nodes < 1 || opts.Replicas < 0 || opts.Replicas > ReplicasMax || opts.Proxies < 0 || opts.Proxies > ReplicasMax ||
		opts.Nodes+opts.Replicas+opts.Proxies > NodesMax {
		return nil, fmt.Errorf("testcell: %d nodes, %d replicas and %d proxies, want 1..%d machines, at most %d replicas and %d proxies",
			opts.Nodes, opts.Replicas, opts.Proxies, NodesMax, ReplicasMax, ReplicasMax)
	}
	if opts.Tunables == (host.Tunables{}) {
		opts.Tunables = FastTunables()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Cell{opts: opts, dir: dir}
	if opts.Secure {
		if err := c.makeCA(dir); err != nil {
			return nil, err
		}
	}
	for i := range opts.Nodes + opts.Replicas + opts.Proxies {
		n := &Node{Dir: filepath.Join(dir, fmt.Sprintf("m%d", i+1)), Metrics: runtime.NewMetrics(nil),
			Replica: i >= opts.Nodes && i < opts.Nodes+opts.Replicas, Proxy: i >= opts.Nodes+opts.Replicas}
		if opts.Secure {
			if err := c.issueNode(dir, n, i); err != nil {
				c.Close()
				return nil, err
			}
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			c.Close()
			return nil, err
		}
		n.Addr = lis.Addr().String()
		if err := c.serve(n, lis, i); err != nil {
			c.Close()
			return nil, err
		}
		c.Nodes = append(c.Nodes, n)
	}
	access, err := c.Access()
	if err != nil {
		c.Close()
		return nil, err
	}
	plan, err := machine.InitCellWith(ctx, c.Addrs()[0], &pb.CellInitRequest{Members: c.Addrs(), Replicas: c.ReplicaAddrs(),
		Proxies: c.ProxyAddrs(), Journals: uint32(opts.Journals)}, access)
	if err != nil {
		c.Close()
		return nil, err
	}
	c.Plan = plan
	for _, j := range plan.GetJournals() {
		c.Journals = append(c.Journals, wire.JournalIDFromPB(j))
	}
	return c, nil
}

// AddIdle starts one more machine, idle: in no cell, with an empty data
// dir, as `paros serve` on a new host. A reconfiguration adds it to the
// cell (admin.Client.Reconfigure, naming its Addr). It is the last of
// Nodes, stopped by Close like the others.
func (c *Cell) AddIdle() (*Node, error) { return c.addIdle(false, false) }

// AddIdleReplica starts one more machine, idle, as a replica machine
// (`paros serve --role replica` on a new host): admin.Client.SetReplicas
// adds it to the cell. It is the last of Nodes, stopped by Close like the
// others.
func (c *Cell) AddIdleReplica() (*Node, error) { return c.addIdle(true, false) }

// AddIdleProxy starts one more machine, idle, as a proxy machine (`paros
// serve --role proxy` on a new host): admin.Client.SetProxies adds it to
// the cell. It is the last of Nodes, stopped by Close like the others.
func (c *Cell) AddIdleProxy() (*Node, error) { return c.addIdle(false, true) }

func (c *Cell) addIdle(replica, proxy bool) (*Node, error) {
	i := len(c.Nodes)
	if i >= NodesMax {
		return nil, fmt.Errorf("testcell: %d nodes already, at most %d", i, NodesMax)
	}
	n := &Node{Dir: filepath.Join(c.dir, fmt.Sprintf("m%d", i+1)), Metrics: runtime.NewMetrics(nil), Replica: replica, Proxy: proxy}
	if c.opts.Secure {
		if err := c.issueNode(c.dir, n, i); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n.Addr = lis.Addr().String()
	if err := c.serve(n, lis, i); err != nil {
		return nil, err
	}
	c.Nodes = append(c.Nodes, n)
	return n, nil
}

// serve opens node n's machine and serves it on lis.
func (c *Cell) serve(n *Node, lis net.Listener, i int) error {
	role := machine.RoleNode
	switch {
	case n.Replica:
		role = machine.RoleReplica
	case n.Proxy:
		role = machine.RoleProxy
	}
	m, err := machine.Open(machine.Config{DataDir: n.Dir, Advertise: n.Addr, Tunables: c.opts.Tunables,
		Logger: c.opts.Logger.With("machine", i+1), Metrics: n.Metrics, TLS: n.TLS, Role: role})
	if err != nil {
		lis.Close()
		return err
	}
	gs := grpc.NewServer(append(m.ServerOptions(),
		grpc.ChainUnaryInterceptor(n.count), grpc.ChainStreamInterceptor(n.countStream))...)
	m.Register(gs)
	go func() { _ = gs.Serve(lis) }()
	n.mu.Lock()
	n.machine, n.gs = m, gs
	n.mu.Unlock()
	return nil
}

// Form runs the cell-init decree from the machine at via over members,
// naming replicas as the cell's replica machines, asking for journals
// journals, and retries while a machine is not up yet or another proposer
// contends. It returns the chosen plan. access is how the machine is
// reached (Cell.Access).
func Form(ctx context.Context, via string, members, replicas []string, journals int, access machine.Access) (*pb.CellPlan, error) {
	return machine.InitCell(ctx, via, members, replicas, uint32(journals), access)
}

// makeCA makes a secure cell's CA in dir/pki/ca and its admin token.
func (c *Cell) makeCA(dir string) error {
	ca, err := security.NewCA("testcell")
	if err != nil {
		return err
	}
	caDir := filepath.Join(dir, "pki", "ca")
	if err := ca.WriteCA(caDir); err != nil {
		return err
	}
	now := time.Now()
	tok, err := ca.IssueToken(security.Claims{Subject: "testcell admin",
		Scopes:   []security.Scope{{Ops: security.OpRead | security.OpWrite | security.OpAdmin}},
		IssuedAt: now.Unix(), Expires: now.Add(tokenTTL).Unix()})
	if err != nil {
		return err
	}
	c.CA, c.CAFile, c.Token = ca, filepath.Join(caDir, security.CACertFile), tok
	return nil
}

// issueNode writes machine i's credentials (a random node id, valid for
// 127.0.0.1 and localhost) into dir/pki/mN and loads them into n.
func (c *Cell) issueNode(dir string, n *Node, i int) error {
	certPEM, keyPEM, err := c.CA.IssueNode(security.RandomNodeID(), []string{"127.0.0.1", "localhost"})
	if err != nil {
		return err
	}
	n.TLSDir = filepath.Join(dir, "pki", fmt.Sprintf("m%d", i+1))
	if err := (&security.CA{Cert: c.CA.Cert}).WriteCA(n.TLSDir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.TLSDir, security.NodeCertFile), certPEM, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.TLSDir, security.NodeKeyFile), keyPEM, 0o600); err != nil {
		return err
	}
	n.TLS, err = security.LoadNode(n.TLSDir)
	return err
}

// ClientTLS is the TLS a client of a secure cell dials with (trusting the
// cell's CA only), or nil for a plaintext cell.
func (c *Cell) ClientTLS() (*tls.Config, error) {
	if c.CA == nil {
		return nil, nil
	}
	return security.ClientConfig(c.CA.CertPEM())
}

// ClientOptions are the client.Dial options that get into the cell: the
// CA and the admin token of a secure cell, none for a plaintext one.
func (c *Cell) ClientOptions() []client.Option {
	if c.CA == nil {
		return []client.Option{client.WithInsecure()}
	}
	return []client.Option{client.WithCAFile(c.CAFile), client.WithToken(c.Token)}
}

// Access is how an operator's tool reaches the cell's machines
// (machine.InitCell): TLS and the admin token of a secure cell, plaintext
// otherwise.
func (c *Cell) Access() (machine.Access, error) {
	cfg, err := c.ClientTLS()
	if err != nil || cfg == nil {
		return machine.Access{}, err
	}
	return machine.Access{TLS: cfg, Token: c.Token}, nil
}

// Addrs lists the gRPC addresses of the machines that are no replica and
// no proxy.
func (c *Cell) Addrs() []string {
	out := make([]string, 0, len(c.Nodes))
	for _, n := range c.Nodes {
		if !n.Replica && !n.Proxy {
			out = append(out, n.Addr)
		}
	}
	return out
}

// ReplicaAddrs lists the replica machines' gRPC addresses.
func (c *Cell) ReplicaAddrs() []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Replica {
			out = append(out, n.Addr)
		}
	}
	return out
}

// ProxyAddrs lists the proxy machines' gRPC addresses.
func (c *Cell) ProxyAddrs() []string {
	var out []string
	for _, n := range c.Nodes {
		if n.Proxy {
			out = append(out, n.Addr)
		}
	}
	return out
}

// Machine is node i's machine (nil while stopped).
func (c *Cell) Machine(i int) *machine.Machine {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.machine
}

// Inspect asks node i, in process, for journal id's consensus facts.
func (c *Cell) Inspect(ctx context.Context, i int, id journal.ID) (host.InspectReply, error) {
	m := c.Machine(i)
	if m == nil {
		return host.InspectReply{}, errors.New("testcell: the machine is stopped")
	}
	r, err := m.Call(ctx, host.Call{Kind: host.CallInspect, Inspect: host.InspectRequest{Journal: id}})
	return r.Inspect, err
}

// WaitLeader waits until exactly one running machine says it leads journal
// id, and returns its index.
func (c *Cell) WaitLeader(ctx context.Context, id journal.ID) (int, error) {
	for {
		leader, leaders := -1, 0
		for i := range c.Nodes {
			if in, err := c.Inspect(ctx, i, id); err == nil && in.Role == "leader" {
				leader, leaders = i, leaders+1
			}
		}
		if leaders == 1 {
			return leader, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("testcell: no single leader of %s: %w", id, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// Stop stops node i (its gRPC server, then its machine). Its data dir
// stays; Restart brings it back as an existing member.
func (c *Cell) Stop(i int) error {
	n := c.Nodes[i]
	n.mu.Lock()
	m, gs := n.machine, n.gs
	n.machine, n.gs = nil, nil
	n.mu.Unlock()
	if m == nil {
		return nil
	}
	gs.Stop()
	return m.Close()
}

// Restart starts a stopped node i again on its address.
func (c *Cell) Restart(i int) error {
	n := c.Nodes[i]
	if c.Machine(i) != nil {
		return fmt.Errorf("testcell: machine %d is running", i)
	}
	lis, err := net.Listen("tcp", n.Addr)
	if err != nil {
		return err
	}
	return c.serve(n, lis, i)
}

// Close stops every machine.
func (c *Cell) Close() error {
	var first error
	for i := range c.Nodes {
		if err := c.Stop(i); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Calls counts the gRPC calls node n received for a full method name, e.g.
// "/paros.v1.Journal/Write". The calls of the machines' own control plane
// (machine.ControlPlaneUserAgent) are not counted: a test counts what its
// clients cause.
func (n *Node) Calls(method string) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.calls[method]
}

func (n *Node) record(method string) {
	n.mu.Lock()
	if n.calls == nil {
		n.calls = map[string]int64{}
	}
	n.calls[method]++
	n.mu.Unlock()
}

func (n *Node) count(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if !controlPlaneCall(ctx) {
		n.record(info.FullMethod)
	}
	return h(ctx, req)
}

func (n *Node) countStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if !controlPlaneCall(ss.Context()) {
		n.record(info.FullMethod)
	}
	return h(srv, ss)
}

// controlPlaneCall reports whether a call comes from a machine's control
// plane (its gRPC user agent starts with machine.ControlPlaneUserAgent).
func controlPlaneCall(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, ua := range md.Get("user-agent") {
		if strings.HasPrefix(ua, machine.ControlPlaneUserAgent) {
			return true
		}
	}
	return false
}
