package server

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
)

// Security configures who a machine's gRPC server lets in. The zero value
// of every field but Node is the production default.
type Security struct {
	// Node is the machine's credentials (security.LoadNode). Nil serves
	// plaintext and authenticates nobody: the explicit --insecure mode
	// (the limits and input checks still apply).
	Node *security.Node
	// PrincipalCallsMax bounds the calls one principal (a token subject, a
	// peer node, or a remote host in --insecure mode) may have in flight
	// on this machine; a stream counts as one call for its whole life.
	// Past it a call is refused with ResourceExhausted. Zero means
	// PrincipalCallsMaxDefault.
	PrincipalCallsMax int
	// Now reads the clock tokens' expiry is checked against. Nil means
	// time.Now.
	Now func() time.Time
	// ControlPeer reports whether a peer machine (its certificate
	// verified) may make a journal call: the cell's control-plane
	// journals, to the machines whose role reads or writes them, and the
	// seal of a journal being deleted, to the cell's acceptor machines
	// (machine.Machine.ControlPeer). A machine's certificate grants no
	// journal call but these. Nil: none.
	ControlPeer func(PeerCall) bool
}

// PeerCall is a journal call made with a machine's certificate.
type PeerCall struct {
	Node    uint64      // the peer's node id, from its certificate
	Journal journal.ID  // the journal the call names
	Op      security.Op // OpRead or OpWrite
	// Seal: the call is a SetLeader installing the seal (journal.Sealed):
	// it writes no record, and nothing moves the fence after it.
	Seal bool
}

// Limits of a machine's gRPC server. Each is a bound a
// hostile client would otherwise choose for us.
const (
	// PrincipalCallsMaxDefault is Security.PrincipalCallsMax's default.
	// A client library pipelines its writes on one WriteStream and holds
	// a few long-polling reads, a peer one stream and a few Machine calls:
	// 1,024 is far above any of them, yet bounds what one credential pins
	// (each call holds a goroutine and a request of up to a Write's 1 MiB).
	PrincipalCallsMaxDefault = 1024
	// connStreamsMax is HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS: streams
	// one connection may hold open. Past it a gRPC client queues its calls
	// instead of failing them, so it is a back-pressure bound, not an
	// error; 256 is a quarter of the per-principal bound, so one
	// connection cannot take a principal's whole budget by itself.
	connStreamsMax = 256
	// handshakeTimeout bounds a new connection's TLS and HTTP/2 handshake:
	// a client that opens a socket and trickles bytes (slowloris) is
	// dropped after it. 5 s is ample for a handshake across a region.
	handshakeTimeout = 5 * time.Second
	// connIdleMax closes a connection with no call for that long, so idle
	// sockets do not accumulate; gRPC clients reconnect transparently.
	connIdleMax = 5 * time.Minute
	// keepaliveTime is how long a connection may be silent before the
	// server pings it, and keepaliveTimeout how long it waits for the ack
	// before closing it: a peer that vanished without a FIN is noticed in
	// under a minute instead of gRPC's default two hours.
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second
	// clientPingIntervalMin is the shortest keepalive interval a client
	// may use; a client pinging more often is sent GOAWAY (a ping flood
	// costs the server a frame each). gRPC clients default to no pings;
	// those that enable keepalive typically ping every 10 s or more.
	clientPingIntervalMin = 10 * time.Second
	// headerListBytesMax bounds a call's metadata: the largest token is
	// security.TokenBytesMax (4 KiB); gRPC's default would accept 16 MiB
	// of headers per call.
	headerListBytesMax = 64 << 10
	// streamWindowBytes is HTTP/2's per-stream flow-control window: what a
	// client may send on one stream that the server has not read yet, and
	// so what gRPC buffers for a stream whose handler stopped reading (a
	// WriteStream held by its principal's write budget) or has not started
	// (one about to be refused). Setting it turns off gRPC's dynamic (BDP)
	// windows, which grow every stream's window to 16 MiB: 256 streams of
	// a connection could then pin 4 GiB unread. 256 KiB holds a coalesced
	// Writer's writes in flight (4 writes of a few hundred appends) without
	// a window update per message: at gRPC's static 64 KiB such a Writer
	// ran 15-20% slower (BenchmarkPipelinedWriter/coalesced, 107-119k
	// appends/s against 136-147k; 145-180k at 256 KiB). A message larger
	// than the window is let in whole as the handler reads it (gRPC widens
	// the window to the message), and a peer merges what it has queued
	// into one Deliver of up to 4 MiB, so a backlog crosses a long round
	// trip in messages larger than the window.
	streamWindowBytes = 256 << 10
	// connWindowBytes is the connection's window: what all its streams
	// together may have in flight. gRPC credits it as data arrives, not as
	// handlers read, so it bounds data in transit, not data buffered: one
	// Peer frame of the largest size (runtime.PeerMessageBytesMax) may be
	// in flight at once, whatever the round trip.
	connWindowBytes = runtime.PeerMessageBytesMax
	// connReadBufferBytes and connWriteBufferBytes are the connection's
	// socket buffers (gRPC's defaults, named for the sum below).
	connReadBufferBytes  = 32 << 10
	connWriteBufferBytes = 32 << 10
)

// What one connection can make the server hold, with the limits above (the
// worst case):
//
//	socket buffers                    32 KiB + 32 KiB
//	per stream, data not yet read     streamWindowBytes           256 KiB
//	per stream, replies not yet sent  gRPC's write quota           64 KiB
//	  (a client that never reads holds the sender there)
//	per stream, a message being read  runtime.PeerMessageBytesMax  16 MiB
//	  (gRPC takes it whole before the handler sees it)
//	streams                           connStreamsMax               256
//
// so 64 KiB + 256 × (256 KiB + 64 KiB) = 80 MiB of buffers, plus one message
// per stream being read: 256 × 16 MiB = 4 GiB if every stream sends a
// message of the Peer frame limit (one MaxRecvMsgSize serves every
// service). A principal's WriteStreams are bounded over all its
// connections (WriteStreamsPerPrincipalMax, 64, fair.go), each holding at
// most one message beyond its principal's write budget, and the budget
// bounds the writes read and not answered (PrincipalWritesMax writes,
// PrincipalWriteBytesMax bytes): 64 × (320 KiB + one message) + 32 MiB.
// With the client library's messages (at most 1,024 writes; a few hundred
// KiB for small records) that is under 64 × 1 MiB + 32 MiB = 96 MiB per
// principal; with messages of the frame limit 64 × 16 MiB = 1 GiB.

// ServerOptions returns every option a paros machine's gRPC server needs:
//   - the Peer stream's frame limit (runtime.PeerMessageBytesMax);
//   - a codec that answers InvalidArgument, not Internal, to bytes that do
//     not decode;
//   - the connection limits above (streams per connection, flow-control
//     windows and buffers, handshake timeout, idle connections closed,
//     keepalive pings and their enforcement, metadata size), a
//     per-principal bound on calls in flight, and each principal's fair
//     share (fair.go): at most WriteStreamsPerPrincipalMax WriteStreams, a
//     budget of writes in flight over all its streams and unary Writes,
//     and its own queue at the event loop (runtime.WithSubmitter);
//   - with credentials (sec.Node set): TLS 1.3 with peer certificates
//     verified against the cell's CA, and every call authenticated and
//     authorized by the rules of the table in rules.go. Without them
//     (--insecure) every call is let in.
func ServerOptions(sec Security) []grpc.ServerOption {
	g := newGate(sec)
	f := newFairness()
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(runtime.PeerMessageBytesMax),
		grpc.ForceServerCodecV2(newDecodeCheckCodec()),
		grpc.MaxConcurrentStreams(connStreamsMax),
		grpc.ConnectionTimeout(handshakeTimeout),
		grpc.MaxHeaderListSize(headerListBytesMax),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle: connIdleMax,
			Time:              keepaliveTime,
			Timeout:           keepaliveTimeout,
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime: clientPingIntervalMin,
			// Peers and clients keep connections between calls; their
			// pings on an idle connection are legitimate (and the
			// connection still closes after connIdleMax).
			PermitWithoutStream: true,
		}),
		grpc.InitialWindowSize(streamWindowBytes),
		grpc.InitialConnWindowSize(connWindowBytes),
		grpc.ReadBufferSize(connReadBufferBytes),
		grpc.WriteBufferSize(connWriteBufferBytes),
		// The gate first (who the principal is), then its fair share: its
		// WriteStreams, its writes in flight, its turn at the event loop.
		grpc.ChainUnaryInterceptor(g.unary, f.unary),
		grpc.ChainStreamInterceptor(g.stream, f.stream),
	}
	if sec.Node != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(sec.Node.ServerConfig())))
	}
	return opts
}
