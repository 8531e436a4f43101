package main

// NATS JetStream: three nats-server instances (github.com/nats-io/
// nats-server/v2/server, embedded in a child process of the harness: the
// hidden subcommand `nats-member`), clustered over routes, JetStream on,
// one stream BENCH with file storage and 3 replicas. Two durability
// settings, each its own fresh cluster:
//
//   - sync always (`sync_interval: always`, Options.SyncAlways): every
//     write to the stream's file store is fsynced before the publish is
//     acknowledged — comparable with paros and etcd;
//   - the default (`sync_interval` 2 minutes): a publish is acknowledged
//     once a majority holds it in memory / the page cache. NOT durable on
//     acknowledgement: a power loss of a majority within the interval loses
//     acknowledged messages.
//
// Clients use nats.go's jetstream package. A pool of connections, each
// connecting to the servers in a rotated order.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsMember is the hidden subcommand: one embedded nats-server.
func natsMember(args []string) error {
	fs := flag.NewFlagSet("nats-member", flag.ContinueOnError)
	name := fs.String("name", "", "server name")
	dir := fs.String("dir", "", "JetStream store dir")
	port := fs.Int("port", 0, "client port")
	cport := fs.Int("cluster-port", 0, "route port")
	routes := fs.String("routes", "", "route URLs, comma-separated")
	always := fs.Bool("sync-always", false, "fsync every write (sync_interval: always)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	opts := &server.Options{
		ServerName: *name,
		Host:       "127.0.0.1",
		Port:       *port,
		JetStream:  true,
		StoreDir:   *dir,
		Cluster:    server.ClusterOpts{Name: "paros-bench", Host: "127.0.0.1", Port: *cport},
		Routes:     server.RoutesFromStr(*routes),
		NoSigs:     true,
		SyncAlways: *always,
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return err
	}
	s.ConfigureLogger()
	s.Start()
	if !s.ReadyForConnections(60 * time.Second) {
		return fmt.Errorf("nats member %s not ready", *name)
	}
	fmt.Fprintf(os.Stderr, "nats member %s ready (sync always: %v)\n", *name, *always)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	s.Shutdown()
	return nil
}

const natsStream = "BENCH"

type natsSys struct {
	self   string
	always bool
	// name, when set, replaces key() (the scale rows' clusters, scale.go).
	name   string
	urls   []string
	procs  []*child
	conns  []*nats.Conn
	js     []jetstream.JetStream
	admin  jetstream.JetStream
	adminC *nats.Conn
}

func newNATS(self string, always bool) *natsSys { return &natsSys{self: self, always: always} }

func (s *natsSys) key() string {
	if s.name != "" {
		return s.name
	}
	if s.always {
		return "nats-always"
	}
	return "nats-default"
}

func (s *natsSys) title() string {
	if s.always {
		return "JetStream (sync always)"
	}
	return "JetStream (default sync)"
}

func (s *natsSys) durability() string {
	if s.always {
		return "sync_interval: always — every stream write fsynced before the ack; R3, acked once a majority stored it"
	}
	return "default sync_interval (2 min): acked once a majority holds it in memory/page cache; NOT durable on ack"
}

func (s *natsSys) members() []*child    { return s.procs }
func (s *natsSys) pprofAddr(int) string { return "" }

func (s *natsSys) start(ctx context.Context, dir string) error {
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	var routes []string
	for i := range 3 {
		s.urls = append(s.urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3+i]))
	}
	for i := range 3 {
		name := fmt.Sprintf("%s-n%d", s.key(), i+1)
		d := filepath.Join(dir, name)
		args := []string{"nats-member", "--name", fmt.Sprintf("n%d", i+1), "--dir", d,
			"--port", fmt.Sprint(ports[i]), "--cluster-port", fmt.Sprint(ports[3+i]),
			"--routes", strings.Join(routes, ",")}
		if s.always {
			args = append(args, "--sync-always")
		}
		c, err := startChild(name, d+".log", s.self, args...)
		if err != nil {
			return err
		}
		s.procs = append(s.procs, c)
	}
	for _, u := range s.urls {
		if err := waitTCP(strings.TrimPrefix(u, "nats://"), 30*time.Second); err != nil {
			return err
		}
	}
	nc, err := s.connect(0)
	if err != nil {
		return err
	}
	s.adminC = nc
	s.admin, err = jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = s.admin.CreateOrUpdateStream(cctx, jetstream.StreamConfig{
			Name: natsStream, Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage,
			Replicas: 3, Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
			MaxBytes: 8 << 30,
		})
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats: create stream: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Wait until a publish is acknowledged (the stream has a leader).
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.admin.Publish(cctx, "bench.ready", []byte("1"))
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats: stream not ready: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// connect dials the servers starting with server i.
func (s *natsSys) connect(i int) (*nats.Conn, error) {
	var order []string
	for k := range s.urls {
		order = append(order, s.urls[(i+k)%len(s.urls)])
	}
	return nats.Connect(strings.Join(order, ","), nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond), nats.Timeout(2*time.Second))
}

func (s *natsSys) pool(n int) ([]jetstream.JetStream, error) {
	for len(s.js) < n {
		nc, err := s.connect(len(s.js))
		if err != nil {
			return nil, err
		}
		js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
		if err != nil {
			return nil, err
		}
		s.conns = append(s.conns, nc)
		s.js = append(s.js, js)
	}
	return s.js[:n], nil
}

func (s *natsSys) stop() {
	for _, c := range s.conns {
		c.Close()
	}
	if s.adminC != nil {
		s.adminC.Close()
	}
	for _, p := range s.procs {
		p.kill()
	}
}

type natsWriter struct {
	js      []jetstream.JetStream
	subject string
	next    atomic.Uint64
	attempt time.Duration
}

func (s *natsSys) newWriter(ctx context.Context, inflight int, attempt time.Duration) (writer, error) {
	js, err := s.pool(connsFor(inflight))
	if err != nil {
		return nil, err
	}
	return &natsWriter{js: js, subject: "bench.w", attempt: attempt}, nil
}

func (s *natsSys) tailWriter(ctx context.Context) (writer, error) {
	js, err := s.pool(1)
	if err != nil {
		return nil, err
	}
	return &natsWriter{js: js, subject: "bench.tail", attempt: 2 * time.Second}, nil
}

// write publishes one message (synchronous publish: wait for the stream's
// ack), or a batch as len(recs) asynchronous publishes awaited together
// (not atomic: JetStream's atomic batch publish has no nats.go helper).
func (w *natsWriter) write(ctx context.Context, recs [][]byte) (time.Time, error) {
	js := w.js[w.next.Add(1)%uint64(len(w.js))]
	for {
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		at := time.Now()
		var err error
		if len(recs) == 1 {
			cctx, cancel := context.WithTimeout(ctx, w.attempt)
			_, err = js.Publish(cctx, w.subject, recs[0])
			cancel()
		} else {
			err = w.publishBatch(ctx, js, recs)
		}
		if err == nil {
			return at, nil
		}
		sleepCtx(ctx, 5*time.Millisecond)
	}
}

var errNATSTimeout = errors.New("nats: batch ack timeout")

func (w *natsWriter) publishBatch(ctx context.Context, js jetstream.JetStream, recs [][]byte) error {
	futs := make([]jetstream.PubAckFuture, 0, len(recs))
	for _, r := range recs {
		f, err := js.PublishAsync(w.subject, r, jetstream.WithStallWait(w.attempt))
		if err != nil {
			return err
		}
		futs = append(futs, f)
	}
	t := time.NewTimer(w.attempt)
	defer t.Stop()
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-t.C:
			return errNATSTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (w *natsWriter) close() {}

// subscribe creates an ephemeral push consumer on the tail subject that
// delivers only new messages, without acks.
func (s *natsSys) subscribe(ctx context.Context, reader int, ready func(), fn func(rec []byte)) error {
	nc, err := s.connect(reader)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	var cons jetstream.PushConsumer
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cons, err = js.CreatePushConsumer(cctx, natsStream, jetstream.ConsumerConfig{
			DeliverSubject: nats.NewInbox(), DeliverPolicy: jetstream.DeliverNewPolicy,
			AckPolicy: jetstream.AckNonePolicy, FilterSubject: "bench.tail", InactiveThreshold: time.Minute,
		})
		cancel()
		if err == nil {
			break
		}
		if attempt == 4 || ctx.Err() != nil {
			return fmt.Errorf("nats: create push consumer: %w", err)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { fn(m.Data()) })
	if err != nil {
		return err
	}
	ready()
	<-ctx.Done()
	cc.Stop()
	return nil
}

// leader is the member that leads the stream's Raft group.
func (s *natsSys) leader(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.admin.Stream(cctx, natsStream)
	if err != nil {
		return -1, err
	}
	info, err := st.Info(cctx)
	if err != nil {
		return -1, err
	}
	if info.Cluster == nil {
		return -1, errors.New("nats: stream info has no cluster")
	}
	var i int
	if _, err := fmt.Sscanf(info.Cluster.Leader, "n%d", &i); err != nil || i < 1 || i > len(s.procs) {
		return -1, fmt.Errorf("nats: stream leader %q", info.Cluster.Leader)
	}
	return i - 1, nil
}

func (s *natsSys) kill(i int) { s.procs[i].kill() }
