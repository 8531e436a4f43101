package server

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

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
}

// Limits of a machine's gRPC server (STYLE rule 11). Each is a bound a
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
)

// ServerOptions returns every option a paros machine's gRPC server needs:
//   - the Peer stream's frame limit (runtime.PeerMessageBytesMax);
//   - a codec that answers InvalidArgument, not Internal, to bytes that do
//     not decode;
//   - the connection limits above (streams per connection, handshake
//     timeout, idle connections closed, keepalive pings and their
//     enforcement, metadata size) and a per-principal bound on calls in
//     flight;
//   - with credentials (sec.Node set): TLS 1.3 with peer certificates
//     verified against the cell's CA, and every call authenticated and
//     authorized by the rules of the table in auth.go. Without them
//     (--insecure) every call is let in.
func ServerOptions(sec Security) []grpc.ServerOption {
	g := newGate(sec)
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
		grpc.ChainUnaryInterceptor(g.unary),
		grpc.ChainStreamInterceptor(g.stream),
	}
	if sec.Node != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(sec.Node.ServerConfig())))
	}
	return opts
}
