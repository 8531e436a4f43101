package server

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/parosdb/paros/runtime"
	"github.com/parosdb/paros/security"
)

// Security configures who a machine's gRPC server lets in.
type Security struct {
	// Node is the machine's credentials (security.LoadNode). Nil serves
	// plaintext and authenticates nobody: the explicit --insecure mode.
	Node *security.Node
}

// ServerOptions returns every option a paros machine's gRPC server needs:
// the Peer stream's frame limit, and, with credentials, TLS 1.3 with peer
// certificates verified against the cell's CA.
func ServerOptions(sec Security) []grpc.ServerOption {
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(runtime.PeerMessageBytesMax)}
	if sec.Node != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(sec.Node.ServerConfig())))
	}
	return opts
}
