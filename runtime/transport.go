package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	pb "github.com/parosdb/paros/api/parospb/paros/v1"
	"github.com/parosdb/paros/core/paxos"
	"github.com/parosdb/paros/host"
	"github.com/parosdb/paros/wire"
)

// transport keeps one sender goroutine per peer. Each owns a bounded queue
// of Delivers and one long-lived Peer.Stream; it merges whatever is queued
// into one Deliver per send (many messages per send), and reconnects with
// backoff. With credentials (Config.TLS) each stream runs over mutual TLS
// and the peer's certificate must name the node id the sender dials: a
// machine at a peer's address that is not that peer is never sent a
// message. A full queue drops the newest Deliver: consensus resends repair
// losses, and the loop never waits on a peer.
type transport struct {
	r     *Runtime
	peers map[paxos.NodeID]*peerSender
	wg    sync.WaitGroup
	stop  chan struct{}
}

type peerSender struct {
	id   paxos.NodeID
	addr string
	q    chan *pb.Deliver
	// unsent counts the Delivers queued or in a send that has not
	// returned (a graceful shutdown waits for zero: idle).
	unsent atomic.Int64
}

func newTransport(r *Runtime) *transport {
	t := &transport{r: r, peers: map[paxos.NodeID]*peerSender{}, stop: make(chan struct{})}
	for id, addr := range r.cfg.Peers {
		t.add(id, addr)
	}
	return t
}

// add starts a sender for a peer not yet known (on the loop, or before it
// starts).
func (t *transport) add(id paxos.NodeID, addr string) {
	if id == t.r.cfg.NodeID || t.peers[id] != nil {
		return
	}
	p := &peerSender{id: id, addr: addr, q: make(chan *pb.Deliver, peerQueueCapacity)}
	t.peers[id] = p
	t.wg.Add(1)
	go t.run(p)
}

// send runs on the loop: encode and queue without blocking.
func (t *transport) send(to paxos.NodeID, batch []host.Envelope) {
	p := t.peers[to]
	if p == nil {
		return
	}
	d := wire.DeliverToPB(t.r.cfg.NodeID, batch)
	p.unsent.Add(1)
	select {
	case p.q <- d:
		t.r.metrics.PeerQueue.WithLabelValues(p.addr).Set(float64(len(p.q)))
		t.r.metrics.PeerMessagesSent.Add(float64(len(batch)))
	default:
		p.unsent.Add(-1)
		t.r.metrics.OutboundDropped.Inc()
	}
}

// idle reports whether every Deliver handed to the transport left in a
// send that returned (or was lost with its link). On the loop.
func (t *transport) idle() bool {
	for _, p := range t.peers {
		if p.unsent.Load() > 0 {
			return false
		}
	}
	return true
}

func (t *transport) close() {
	close(t.stop)
	t.wg.Wait()
}

const (
	// A dead peer is redialled every backoffMax at most, so a restarted
	// machine is heard from within that (a replica or a node below the
	// floor catches up from the first beat that reaches it); a link that
	// carried anything before it failed starts over from backoffMin.
	backoffMin       = 50 * time.Millisecond
	backoffMax       = 500 * time.Millisecond
	mergeEnvelopeMax = 1024
	// mergeBytesMax bounds a merged Deliver; one message is itself bounded
	// by paxos.MessageBytesMax plus one write.
	mergeBytesMax = 4 << 20
	// PeerMessageBytesMax is the gRPC frame limit of the Peer stream, on
	// both sides: a merged Deliver plus one message of the largest kind.
	PeerMessageBytesMax = 16 << 20
)

func (t *transport) run(p *peerSender) {
	defer t.wg.Done()
	backoff := backoffMin
	for {
		sent, err := t.stream(p)
		select {
		case <-t.stop:
			return
		default:
		}
		if err != nil {
			t.r.log.Debug("peer link down", "peer", p.id, "addr", p.addr, "err", err)
		}
		if sent {
			backoff = backoffMin // the link was up: a new failure starts over
		}
		select {
		case <-time.After(backoff):
		case <-t.stop:
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// credentials is how the sender dials peer id: mutual TLS expecting id's
// certificate, or plaintext without credentials.
func (t *transport) credentials(id paxos.NodeID) credentials.TransportCredentials {
	if t.r.cfg.TLS == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(t.r.cfg.TLS.PeerConfig(uint64(id)))
}

// stream holds one connection to the peer until it fails or the process
// stops. sent reports whether any Deliver went out on it.
func (t *transport) stream(p *peerSender) (sent bool, err error) {
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(t.credentials(p.id)),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(PeerMessageBytesMax)))
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	s, err := pb.NewPeerClient(conn).Stream(ctx)
	if err != nil {
		return false, err
	}
	go func() {
		for {
			if _, err := s.Recv(); err != nil {
				cancel()
				return
			}
		}
	}()
	for {
		var d *pb.Deliver
		select {
		case d = <-p.q:
		case <-ctx.Done():
			return sent, ctx.Err()
		}
		// Merge what else is queued into this send.
		size, merged := proto.Size(d), int64(1)
	merge:
		for len(d.Envelopes) < mergeEnvelopeMax && size < mergeBytesMax {
			select {
			case more := <-p.q:
				if n := proto.Size(more); size+n > mergeBytesMax {
					err := s.Send(d)
					p.unsent.Add(-merged)
					if err != nil {
						p.unsent.Add(-1) // more is lost with the link
						return sent, err
					}
					sent = true
					d, size, merged = more, n, 1
					continue
				}
				d.Envelopes = append(d.Envelopes, more.Envelopes...)
				size += proto.Size(more)
				merged++
			default:
				break merge
			}
		}
		err := s.Send(d)
		p.unsent.Add(-merged)
		if err != nil {
			return sent, err
		}
		sent = true
	}
}
