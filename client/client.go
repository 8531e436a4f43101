package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/peer"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/core/quorum"
	"github.com/parosdb/paros/wire"
)

// Bounds of the network handles. Every loop that asks the
// servers again is bounded by roundsMax as well as by the caller's context.
const (
	// ServersMax bounds the addresses one Client dials.
	ServersMax = 64
	// roundsMax bounds how many times one call asks every server. With the
	// backoff below, roundsMax rounds span about 30 s: long enough to ride
	// out an election or a cell still forming, short enough that a call
	// with no deadline ends.
	roundsMax = 64
	// backoffMin and backoffMax bound the pause between two rounds.
	backoffMin = 10 * time.Millisecond
	backoffMax = 500 * time.Millisecond
	// attemptTimeout bounds one attempt at one server, beyond a read's own
	// long-poll. The server answers a parked call ambiguous after about
	// 10 s, so an attempt normally ends with an answer.
	attemptTimeout = 12 * time.Second
	// learnTimeout bounds one Admin.Inspect{node_only} that maps an address
	// to its node id; learnRetry is how soon an address that did not answer
	// is asked again.
	learnTimeout = 2 * time.Second
	learnRetry   = time.Second
	// extraConnsMax bounds the connections a Client keeps to machines it
	// was not given (Client.extra): the operator's calls (client/admin)
	// reach every machine of the cell.
	extraConnsMax = 2 * quorum.MembersMax
)

// ErrNoServer: no server could be reached, so the call was not sent
// anywhere and took no effect. It is never returned once a request may
// have been received; that case is an ambiguous reply instead.
var ErrNoServer = errors.New("paros/client: no server could be reached; the call was not sent")

// Client is a connection to the servers of one cell: one gRPC connection
// per address, dialled lazily. Node ids are mapped to addresses on demand,
// by an Admin.Inspect{node_only} to each address, so that a NotLeader hint
// (a node id) can be followed. The leader of each journal, as last seen, is
// remembered and asked first.
//
// A Client is safe for concurrent use and meant to be long-lived: open one
// per process and share it. Close it when done.
type Client struct {
	// servers is every machine the Client dials: those given to Dial, in
	// order, then the machines of the cell it learned since (a new leader
	// on a machine added by reconfiguration). Append-only, copied on
	// write (list), so an index names one server for the Client's life.
	servers atomic.Pointer[[]*server]
	// machines are the cell's machines by node id, as Inspect lists them;
	// guarded by mu.
	machines map[uint64]string

	mu sync.Mutex
	// leaders maps a journal to the index of the server that last gave it
	// a verdict, or that a hint named; readFrom to the index of the server
	// that last served a read of it. One entry per journal this Client
	// called.
	leaders  map[journal.ID]int
	readFrom map[journal.ID]int
	// hinted maps a journal to the node a NotLeader named when that node
	// was a machine this Client did not dial yet: the next write learns
	// its address and goes there (whereToWrite).
	hinted map[journal.ID]uint64
	// rotate picks the server a stream opens to when no server names a
	// leader and none answers (findLeader).
	rotate int

	// registryAt is the highest registry position a control change this
	// Client made (client/admin) was decided at: a read of the registry
	// (Resolve, admin's Registry) answers no older fold.
	registryAt atomic.Uint64

	// learnMu serialises learning node ids: one Inspect sweep at a time.
	learnMu sync.Mutex

	// dopts are the dial options of every connection (transport security,
	// token, backoff), kept to reach a machine by an address the Client was
	// not given (the operator's calls in client/admin: Reconfigure, Retire).
	dopts []grpc.DialOption
	// extra are those connections by address, kept until Close; guarded by
	// mu. Invariant: len(extra) <= extraConnsMax.
	extra map[string]*grpc.ClientConn
	// replicaReads: reads ask the replica machines first (WithReplicaReads,
	// replicas.go).
	replicaReads bool
	// muxes are the open WriteStreams every Writer shares, by server index
	// (writerstream.go); opening holds, by server index, the open in
	// progress (closed when it ends), so Writers that want the same
	// server's stream at once wait for one open instead of each opening
	// one; closed: Close ran, no stream opens again. All guarded by mu.
	muxes   map[int]*writeMux
	opening map[int]chan struct{}
	closed  bool
}

// server is one address and what is known about the machine behind it.
type server struct {
	addr    string
	cc      *grpc.ClientConn
	journal pb.JournalClient
	admin   pb.AdminClient

	// Guarded by Client.mu.
	known     bool   // node id learned
	nodeID    uint64 // valid when known
	replica   bool   // valid when known: a replica machine (reads only)
	cellID    uint64 // 0: the machine is idle, not yet in a cell
	journals  []journal.ID
	askedAt   time.Time // last Inspect attempt
	lastReply time.Time // last Inspect answer
	lastErr   error     // error of the last Inspect attempt (nil: it answered)
}

// Dial returns a Client of the cell whose servers listen at servers
// (host:port, at most ServersMax). It waits until one server answers (an
// Admin.Inspect{node_only}), bounded by ctx, so a wrong address list fails
// here rather than at the first call: ErrNoServer wrapping the context's
// error when none answered (and naming the last server's error: a TLS
// handshake that failed, say). A server that refuses the credentials ends
// Dial at once with an error wrapping ErrDenied. Options that cannot work
// (a CA file that does not parse, a token without transport security) fail
// here too. Connections are kept and reconnected for the Client's life.
func Dial(ctx context.Context, servers []string, opts ...Option) (*Client, error) {
	c, err := open(servers, opts...)
	if err != nil {
		return nil, err
	}
	d := backoffMin
	for {
		c.learnMu.Lock()
		c.learn(ctx, func(s *server) bool { return !s.known })
		c.learnMu.Unlock()
		if c.anyKnown() {
			return c, nil
		}
		last := c.lastError()
		if denied(last) {
			c.Close()
			return nil, last
		}
		if d, err = pause(ctx, d); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: %v: %w (last error: %v)", ErrNoServer, servers, err, last)
		}
	}
}

// lastError is the error of the last Inspect that failed, a refusal of the
// credentials (wrapped in ErrDenied) first.
func (c *Client) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var last error
	for _, s := range c.list() {
		if denied(s.lastErr) {
			return deniedError(s.addr, s.lastErr)
		}
		if s.lastErr != nil {
			last = s.lastErr
		}
	}
	return last
}

// open builds the Client without contacting any server.
func open(addrs []string, opts ...Option) (*Client, error) {
	if len(addrs) == 0 {
		return nil, errors.New("paros/client: Dial needs at least one address")
	}
	if len(addrs) > ServersMax {
		return nil, fmt.Errorf("paros/client: %d addresses, at most %d", len(addrs), ServersMax)
	}
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	auth, err := o.authDialOptions()
	if err != nil {
		return nil, err
	}
	dopts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(o.creds),
		// Reconnect quickly after a server comes back: gRPC's default
		// backoff grows to two minutes.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(8<<20), grpc.MaxCallSendMsgSize(8<<20)),
	}, append(auth, o.dial...)...)
	c := &Client{leaders: map[journal.ID]int{}, readFrom: map[journal.ID]int{}, hinted: map[journal.ID]uint64{}, muxes: map[int]*writeMux{}, opening: map[int]chan struct{}{}, dopts: dopts, extra: map[string]*grpc.ClientConn{},
		machines: map[uint64]string{}, replicaReads: !o.noReplicaReads}
	c.servers.Store(&[]*server{})
	seen := map[string]bool{}
	for _, a := range addrs {
		if a == "" || seen[a] {
			continue
		}
		seen[a] = true
		cc, err := grpc.NewClient(a, dopts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("paros/client: dial %s: %w", a, err)
		}
		c.addServer(a, cc)
	}
	if len(c.list()) == 0 {
		return nil, errors.New("paros/client: Dial needs at least one address")
	}
	return c, nil
}

// list is the servers, for reading (see Client.servers).
func (c *Client) list() []*server { return *c.servers.Load() }

// addServer appends a server; callers hold mu, or own c alone (open).
func (c *Client) addServer(addr string, cc *grpc.ClientConn) int {
	old := c.list()
	next := append(slices.Clone(old), &server{addr: addr, cc: cc, journal: pb.NewJournalClient(cc), admin: pb.NewAdminClient(cc)})
	c.servers.Store(&next)
	return len(next) - 1
}

// learnMachine dials a machine of the cell the Client was not given, found
// by its node id in an Inspect's list of the cell's machines, so that a
// leader on a machine added by reconfiguration is reached. It returns the
// new server's index, or -1.
func (c *Client) learnMachine(node uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	addr, ok := c.machines[node]
	if !ok || len(c.list()) >= ServersMax+extraConnsMax {
		return -1
	}
	for i, s := range c.list() {
		if s.addr == addr {
			return i
		}
	}
	cc, err := grpc.NewClient(addr, c.dopts...)
	if err != nil {
		return -1
	}
	return c.addServer(addr, cc)
}

func (c *Client) anyKnown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.list() {
		if s.known {
			return true
		}
	}
	return false
}

// Close closes every connection. Calls in progress fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	muxes := c.muxes
	c.muxes = map[int]*writeMux{}
	c.mu.Unlock()
	for _, m := range muxes {
		m.fail()
	}
	var first error
	for _, s := range c.list() {
		if err := s.cc.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.mu.Lock()
	extra := c.extra
	c.extra = map[string]*grpc.ClientConn{}
	c.mu.Unlock()
	for _, cc := range extra {
		if err := cc.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Servers lists the addresses the Client dials: those given to Dial, in
// order, then the machines of the cell it learned since.
func (c *Client) Servers() []string {
	servers := c.list()
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.addr
	}
	return out
}

// Journal returns a handle on journal id. Handles are cheap and share the
// Client's connections and its memory of each journal's leader.
func (c *Client) Journal(id journal.ID) *Journal {
	return &Journal{c: c, id: id}
}

// inspectAt asks the server at index i (in Servers order) for a journal's
// consensus facts; node-only when id is the zero ID.
func (c *Client) inspectAt(ctx context.Context, i int, id journal.ID) (*pb.InspectReply, error) {
	if i < 0 || i >= len(c.list()) {
		return nil, fmt.Errorf("paros/client: no server %d", i)
	}
	req := &pb.InspectRequest{NodeOnly: id == journal.ID{}}
	if id != (journal.ID{}) {
		req.Journal = wire.JournalIDToPB(id)
	}
	return c.list()[i].admin.Inspect(ctx, req)
}

// order lists server indexes to ask, first first, then the others in Dial
// order. first < 0 means no preference.
func (c *Client) order(first int) []int {
	out := make([]int, 0, len(c.list()))
	if first >= 0 && first < len(c.list()) {
		out = append(out, first)
	}
	for i := range c.list() {
		if i != first {
			out = append(out, i)
		}
	}
	return out
}

// leaderOf is the index of the server believed to lead journal id, or -1.
func (c *Client) leaderOf(id journal.ID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leaderLocked(id)
}

func (c *Client) leaderLocked(id journal.ID) int {
	if i, ok := c.leaders[id]; ok {
		return i
	}
	return -1
}

func (c *Client) setLeader(id journal.ID, i int) {
	c.mu.Lock()
	c.leaders[id] = i
	c.mu.Unlock()
}

// forgetLeader drops server i as journal id's believed leader (a stream to
// it could not open, or broke): the next stream asks who leads.
func (c *Client) forgetLeader(id journal.ID, i int) {
	c.mu.Lock()
	if c.leaders[id] == i {
		delete(c.leaders, id)
	}
	c.mu.Unlock()
}

// hint notes that server i named node, a machine this Client does not
// dial yet, as journal id's leader.
func (c *Client) hint(id journal.ID, i int, node uint64) {
	c.mu.Lock()
	if c.leaders[id] == i {
		delete(c.leaders, id)
	}
	c.hinted[id] = node
	c.mu.Unlock()
}

// takeHint returns and forgets the node last hinted for journal id (0:
// none).
func (c *Client) takeHint(id journal.ID) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hinted[id]
	delete(c.hinted, id)
	return h
}

func (c *Client) setReader(id journal.ID, i int) {
	c.mu.Lock()
	c.readFrom[id] = i
	c.mu.Unlock()
}

// indexOfNode returns the index of a server whose machine has node id
// node, learning ids with Admin.Inspect{node_only} as needed, or -1 when no
// reachable server has it.
func (c *Client) indexOfNode(ctx context.Context, node uint64) int {
	if node == 0 {
		return -1
	}
	if i := c.knownNode(node); i >= 0 {
		return i
	}
	c.learnMu.Lock()
	defer c.learnMu.Unlock()
	if i := c.knownNode(node); i >= 0 { // learned while we waited
		return i
	}
	c.learn(ctx, func(s *server) bool { return !s.known })
	if i := c.knownNode(node); i >= 0 {
		return i
	}
	// A machine of the cell the Client was not given (a reconfiguration
	// or an admission added it): dial it by the address the cell lists,
	// and learn it. The cell's list is asked again when the machine is not
	// on it yet (admitted after this Client learned the list); learnRetry
	// bounds how often.
	for range 2 {
		if i := c.learnMachine(node); i >= 0 {
			c.learn(ctx, func(s *server) bool { return !s.known })
			if c.knownNode(node) == i {
				return i
			}
			return -1
		}
		c.learn(ctx, func(*server) bool { return true })
	}
	return -1
}

func (c *Client) knownNode(node uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.list() {
		if s.known && s.nodeID == node {
			return i
		}
	}
	return -1
}

// learn inspects, in parallel, every server that want selects and that
// was not asked within learnRetry. Callers hold learnMu.
func (c *Client) learn(ctx context.Context, want func(*server) bool) {
	now := time.Now()
	var ask []*server
	c.mu.Lock()
	for _, s := range c.list() {
		if want(s) && now.Sub(s.askedAt) >= learnRetry {
			s.askedAt = now
			ask = append(ask, s)
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ask {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, learnTimeout)
			defer cancel()
			r, err := s.admin.Inspect(actx, &pb.InspectRequest{NodeOnly: true})
			if err == nil && r.GetNodeId() == 0 {
				err = errors.New("paros/client: Inspect answered without a node id")
			}
			if err != nil {
				c.mu.Lock()
				s.lastErr = err
				c.mu.Unlock()
				return
			}
			var js []journal.ID
			for _, j := range r.GetJournals() {
				js = append(js, wire.JournalIDFromPB(j))
			}
			c.mu.Lock()
			s.known, s.nodeID, s.cellID, s.journals, s.lastReply, s.lastErr = true, r.GetNodeId(), r.GetCellId(), js, time.Now(), nil
			s.replica = r.GetMachineRole() == roleReplica
			for _, m := range r.GetMachines() {
				if m.GetNodeId() != 0 && m.GetAddr() != "" && len(c.machines) < ServersMax+extraConnsMax {
					c.machines[m.GetNodeId()] = m.GetAddr()
				}
			}
			c.mu.Unlock()
		})
	}
	wg.Wait()
}

// mayServe reports whether some server might still come to serve journal
// id: one that is idle (not yet in a cell), that lists id, or whose facts
// could not be learned. It refreshes the facts first. A call answered
// UnknownJournal everywhere is final only when mayServe is false.
func (c *Client) mayServe(ctx context.Context, id journal.ID) bool {
	c.learnMu.Lock()
	c.learn(ctx, func(*server) bool { return true })
	c.learnMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.list() {
		if !s.known || s.cellID == 0 || slices.Contains(s.journals, id) {
			return true
		}
	}
	return false
}

// sent reports whether a failed attempt may have reached the server: gRPC
// fills the peer of a call once the call was given a transport stream,
// which is when its bytes may start to leave. A call that never got one
// (connection refused, no route, a context that ended while connecting)
// was not sent.
func sent(p *peer.Peer) bool { return p.Addr != nil }

// pause sleeps for the backoff before another round, or until ctx ends.
// It returns the next backoff.
func pause(ctx context.Context, d time.Duration) (time.Duration, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return min(2*d, backoffMax), nil
	case <-ctx.Done():
		return d, ctx.Err()
	}
}

// attemptCtx bounds one attempt: attemptTimeout plus extra, or the
// caller's deadline when sooner.
func attemptCtx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, attemptTimeout+extra)
}
