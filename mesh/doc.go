// Package mesh is a signed, leaderless coordination journal for the
// runtimes working on one repository: who works on what (sessions), who
// holds which paths (claims), work handed from one run to the next
// (handovers), and reviews asked and answered. There is no leader and no
// consensus. Each runtime appends signed events to its own stream; peers
// replicate streams by comparing marks; everyone folds the same events into
// the same State. Compaction drops streams dead for long and never anything
// live. The package is independent of the Paxos packages: it imports nothing
// from core/, host/ or storage/ (internal/archtest checks it), so a change to
// one cannot break the other.
//
// # Layers
//
//	Journal, Fold, Compact   sans-IO: an injected Clock, no goroutines, no I/O
//	                         (the Journal calls its optional Store, nothing else)
//	Runtime                  admission of own writes, link protocol, peers;
//	                         safe for concurrent use; talks through a Transport
//	Serve, Handler,          the I/O shell: the heartbeat loop, HTTP, the JSONL
//	HTTPTransport, FileStore file, the key file, the TOML configuration
//	MemTransport             the in-process transport the tests use
//
// # Driving a Runtime
//
//  1. New(Config) draws a fresh instance: every run is a new stream.
//  2. Reload the persisted lines, if any (they restore events, not liveness).
//  3. Once per heartbeat: Beat, then SyncWith each of DueTargets (one
//     round replicates both ways), then Housekeep, which drops silent links
//     and compacts once every sixty heartbeats. Serve does exactly this.
//  4. Serve AcceptHello and AcceptSync to peers (Handler does).
//  5. Admit own writes with OpenSession, Claim, Release, PublishHandover,
//     ConsumeHandover, RequestReview, AnswerReview; read State, Status, Peers.
//
// # Formats
//
// An event is one JSON object (see Event for the fields); the JSONL file
// holds one per line. Signatures cover a domain prefix and the canonical
// JSON of the signed object (see Canonical). Frozen, because stored
// signatures depend on them: the domain prefixes (paros-mesh-event/v1,
// paros-mesh-beat/v1, paros-mesh-runtime/v1, paros-mesh-repository/v1,
// paros-mesh-link-{hello,welcome,sync-request,sync-answer}/v1), the
// canonical JSON rules, the identity widths, the kind words, the refusal
// words, the link paths and the identity file schema paros-mesh-identity/v1.
// Limits (eventBytesMax, streamsMax, nodeStreamsMax, …) are named constants
// asserted where they are used.
package mesh
