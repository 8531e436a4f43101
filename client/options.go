package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/parosdb/paros/client/sansio"
	"github.com/parosdb/paros/core/journal"
	"github.com/parosdb/paros/security"
)

// Every option of the package, by what it configures: the Client (Dial's
// Option: transport security, token, reads), a Writer (WriterOption) and a
// Reader (ReaderOption). A journal's shape at its creation is
// client/admin's (admin.CreateOption).

// Option configures a Client.
type Option func(*options)

type options struct {
	dial  []grpc.DialOption
	creds credentials.TransportCredentials
	// credsSet: the caller chose the transport security (WithTLS,
	// WithCAFile, WithTransportCredentials, WithInsecure). Dial refuses
	// to run without a choice.
	credsSet bool
	token    string // WithToken; "" sends none
	err      error  // an option that failed (WithCAFile), returned by Dial
	// noReplicaReads: WithReplicaReads(false).
	noReplicaReads bool
}

// WithDialOptions adds gRPC dial options to every connection (interceptors,
// keepalive, a custom dialer).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dial = append(o.dial, opts...) }
}

// WithTransportCredentials sets the connections' transport security to
// c, for what WithCAFile, WithTLS and WithInsecure do not cover.
func WithTransportCredentials(c credentials.TransportCredentials) Option {
	return func(o *options) { o.creds, o.credsSet = c, true }
}

// WithInsecure dials every server in plaintext, with no transport
// security: only a cell served with --insecure answers, and anyone on the
// path reads and changes every call. Dial asks for a choice (WithCAFile,
// WithTLS, WithTransportCredentials or this) rather than defaulting to
// plaintext, because a secure cell answers a plaintext client with
// nothing but a handshake failure.
func WithInsecure() Option {
	return func(o *options) { o.creds, o.credsSet = insecure.NewCredentials(), true }
}

// WithTLS dials every server over TLS with cfg (security.ClientConfig
// builds one that trusts only the cell's CA). It replaces
// WithTransportCredentials.
func WithTLS(cfg *tls.Config) Option {
	return func(o *options) { o.creds, o.credsSet = credentials.NewTLS(cfg), true }
}

// WithCAFile dials every server over TLS 1.3 trusting only the CA
// certificate in the PEM file at path (the cell's ca.crt); server names
// are verified against the addresses dialled. A file that cannot be read
// or parsed makes Dial fail.
func WithCAFile(path string) Option {
	return func(o *options) {
		cfg, err := security.ClientConfigFile(path)
		if err != nil {
			o.err = errors.Join(o.err, fmt.Errorf("paros/client: CA file %s: %w", path, err))
			return
		}
		o.creds, o.credsSet = credentials.NewTLS(cfg), true
	}
}

// WithToken presents token (from `paros cert token`) on every call, as the
// gRPC metadata "authorization: Bearer <token>".
//
// A bearer token lets whoever reads it act as its holder, so it belongs
// on a TLS connection. With WithInsecure (or plaintext transport
// credentials) it goes in the clear, for the one case that needs it: a
// TLS-terminating proxy on the same host. An empty token, or one with
// white space, makes Dial fail.
func WithToken(token string) Option {
	return func(o *options) {
		if token == "" || strings.ContainsAny(token, " \t\r\n") {
			o.err = errors.Join(o.err, errors.New("paros/client: WithToken: an empty token, or one with white space"))
			return
		}
		o.token = token
	}
}

// WithReplicaReads sets whether reads prefer the replica machines among
// the Client's servers (default true). With it off the replicas are asked
// last, after every node. It governs every read of the Client: Reader,
// Journal.Read and Journal.Resolve. Writes never go to a replica either
// way.
func WithReplicaReads(on bool) Option {
	return func(o *options) { o.noReplicaReads = !on }
}

// WriterOption configures a Writer.
type WriterOption func(*writerOptions)

type writerOptions struct {
	pipe  sansio.PipelineOptions
	uuids func() journal.LeaderUUID
}

// WithWindow bounds the appends a Writer keeps outstanding (queued, or in
// a write not yet settled); AppendAsync waits while it is full. The default
// (sansio.DefaultWindow, 4,096) lets a thousand concurrent appenders share
// few writes; a window of 1 makes every append wait for the previous one.
func WithWindow(n int) WriterOption { return func(o *writerOptions) { o.pipe.Window = n } }

// WithWritesOut bounds the writes in flight at once (default
// sansio.DefaultWritesOut, 4). Appends queued meanwhile are coalesced into
// the next write.
func WithWritesOut(n int) WriterOption { return func(o *writerOptions) { o.pipe.WritesOut = n } }

// WithoutCoalescing sends each append as its own write (one slot, one
// verdict each): for measuring, rarely for anything else.
func WithoutCoalescing() WriterOption { return func(o *writerOptions) { o.pipe.NoCoalesce = true } }

// WithUUIDs sets where a Writer draws each claim's uuid (default
// RandomUUIDs). Two writers that draw the same uuid share a fence, so only
// tests should pass anything else (sansio.SeededUUIDs).
func WithUUIDs(f func() journal.LeaderUUID) WriterOption {
	return func(o *writerOptions) { o.uuids = f }
}

// ReaderOption configures a Reader.
type ReaderOption func(*Reader)

// WithTailWait sets how long one read waits at the tail for new records
// before it returns an empty page (default 1 s, at most journal.WaitMsMax
// milliseconds). Zero never waits.
func WithTailWait(d time.Duration) ReaderOption {
	return func(r *Reader) { r.waitMs = uint32(min(max(d, 0).Milliseconds(), journal.WaitMsMax)) }
}

// WithPageLimit bounds the records one read returns (default 0: the
// server's page size).
func WithPageLimit(n int) ReaderOption {
	return func(r *Reader) { r.limit = uint32(min(max(n, 0), journal.ReadRecordsMax)) }
}
