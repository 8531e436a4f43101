package main

// etcd: three members, each a child process of the harness that runs
// go.etcd.io/etcd/server/v3/embed (the harness re-executes itself with the
// hidden subcommand `etcd-member`). Default durability: the WAL is fsynced
// for every Raft Ready batch before the entries are acknowledged. Clients
// use clientv3 with all three endpoints (gRPC round robin; followers forward
// proposals to the leader), as etcd's own benchmark tool does.

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// etcdMember is the hidden subcommand: one embedded etcd member.
func etcdMember(args []string) error {
	fs := flag.NewFlagSet("etcd-member", flag.ContinueOnError)
	name := fs.String("name", "", "member name")
	dir := fs.String("dir", "", "data dir")
	client := fs.String("client", "", "client URL")
	peer := fs.String("peer", "", "peer URL")
	cluster := fs.String("cluster", "", "initial cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cu, err := url.Parse(*client)
	if err != nil {
		return err
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name = *name
	cfg.Dir = *dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = *cluster
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.InitialClusterToken = "paros-bench"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{"stderr"}
	// Everything else is etcd's default: fsync on, snapshot count, quota,
	// heartbeat 100 ms, election timeout 1,000 ms.
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s not ready", *name)
	}
	fmt.Fprintf(os.Stderr, "etcd member %s ready\n", *name)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd:", err)
	}
	e.Close()
	return nil
}

type etcdSys struct {
	self    string
	clients []string
	procs   []*child
	cli     []*clientv3.Client // a pool of connections for the load
	admin   *clientv3.Client
	keys    atomic.Uint64
}

func newEtcd(self string) *etcdSys { return &etcdSys{self: self} }

func (s *etcdSys) key() string   { return "etcd" }
func (s *etcdSys) title() string { return "etcd" }
func (s *etcdSys) durability() string {
	return "default: the Raft WAL is fsynced per Ready batch on a majority before a put is answered"
}
func (s *etcdSys) members() []*child    { return s.procs }
func (s *etcdSys) pprofAddr(int) string { return "" }

func (s *etcdSys) start(ctx context.Context, dir string) error {
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	var peers []string
	for i := range 3 {
		s.clients = append(s.clients, fmt.Sprintf("http://127.0.0.1:%d", ports[i]))
		peers = append(peers, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[3+i]))
	}
	cluster := strings.Join(peers, ",")
	for i := range 3 {
		d := filepath.Join(dir, fmt.Sprintf("etcd-m%d", i+1))
		c, err := startChild(fmt.Sprintf("etcd-m%d", i+1), d+".log", s.self, "etcd-member",
			"--name", fmt.Sprintf("m%d", i+1), "--dir", d, "--client", s.clients[i],
			"--peer", fmt.Sprintf("http://127.0.0.1:%d", ports[3+i]), "--cluster", cluster)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, c)
	}
	admin, err := s.dial(s.clients)
	if err != nil {
		return err
	}
	s.admin = admin
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := admin.Put(cctx, "bench/ready", "1")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd cluster not ready: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

func (s *etcdSys) dial(eps []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second,
		Logger: zap.NewNop(), DialOptions: []grpc.DialOption{}})
}

// pool returns n clients (connections), made on demand and reused.
func (s *etcdSys) pool(n int) ([]*clientv3.Client, error) {
	for len(s.cli) < n {
		c, err := s.dial(s.clients)
		if err != nil {
			return nil, err
		}
		s.cli = append(s.cli, c)
	}
	return s.cli[:n], nil
}

func (s *etcdSys) stop() {
	for _, c := range s.cli {
		c.Close()
	}
	if s.admin != nil {
		s.admin.Close()
	}
	for _, p := range s.procs {
		p.kill()
	}
}

// connsFor is the number of connections for a load of `inflight`
// concurrent writes: one per 10 in flight, at most 100 (etcd's benchmark
// reference: 1,000 clients over 100 connections).
func connsFor(inflight int) int { return min(max(inflight/10, 1), 100) }

type etcdWriter struct {
	s       *etcdSys
	cli     []*clientv3.Client
	next    atomic.Uint64
	prefix  string
	attempt time.Duration
	keys    uint64
}

func (s *etcdSys) writerWith(conns int, prefix string, attempt time.Duration) (*etcdWriter, error) {
	cli, err := s.pool(conns)
	if err != nil {
		return nil, err
	}
	return &etcdWriter{s: s, cli: cli, prefix: prefix, attempt: attempt, keys: 10000}, nil
}

// newWriter: single puts (or a txn of puts for a batch) to random keys of a
// 10,000-key space, over a pool of connections sized by the caller's
// in-flight count.
func (s *etcdSys) newWriter(ctx context.Context, inflight int, attempt time.Duration) (writer, error) {
	return s.writerWith(connsFor(inflight), "k/", attempt)
}

func (s *etcdSys) tailWriter(ctx context.Context) (writer, error) {
	w, err := s.writerWith(1, "tail/", 2*time.Second)
	if err != nil {
		return nil, err
	}
	w.keys = 1 << 62 // every tail record its own key
	return w, nil
}

func (w *etcdWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	n := w.next.Add(1)
	c := w.cli[n%uint64(len(w.cli))]
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		cctx, cancel := context.WithTimeout(ctx, w.attempt)
		var err error
		if len(recs) == 1 {
			_, err = c.Put(cctx, fmt.Sprintf("%s%d", w.prefix, n%w.keys), string(recs[0]))
		} else {
			ops := make([]clientv3.Op, len(recs))
			for i, r := range recs {
				ops[i] = clientv3.OpPut(fmt.Sprintf("%s%d", w.prefix, (n*uint64(len(recs))+uint64(i))%w.keys), string(r))
			}
			_, err = c.Txn(cctx).Then(ops...).Commit()
		}
		cancel()
		if err == nil {
			return at, nil
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
}

func (w *etcdWriter) close() {}

// subscribe watches the tail prefix from the current revision.
func (s *etcdSys) subscribe(ctx context.Context, reader int, ready func(), fn func(rec []byte)) error {
	c, err := s.dial([]string{s.clients[reader%len(s.clients)]})
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	r, err := c.Get(cctx, "bench/ready")
	cancel()
	if err != nil {
		return err
	}
	wch := c.Watch(clientv3.WithRequireLeader(ctx), "tail/", clientv3.WithPrefix(), clientv3.WithRev(r.Header.Revision+1))
	ready()
	for resp := range wch {
		if err := resp.Err(); err != nil && ctx.Err() == nil {
			return err
		}
		for _, ev := range resp.Events {
			fn(ev.Kv.Value)
		}
	}
	return nil
}

// leader asks each member's status for the leader's member id.
func (s *etcdSys) leader(ctx context.Context) (int, error) {
	for i, ep := range s.clients {
		if !s.procs[i].alive() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := s.admin.Status(cctx, strings.TrimPrefix(ep, "http://"))
		cancel()
		if err != nil {
			continue
		}
		if st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return -1, fmt.Errorf("etcd: no member reports itself leader")
}

func (s *etcdSys) kill(i int) { s.procs[i].kill() }
