package paxos

import "errors"

// Errors a node returns. Operating errors are values; a broken invariant
// panics with context.
var (
	// ErrConfig: the configuration handed to NewNode is unusable.
	ErrConfig = errors.New("paros/paxos: bad configuration")
	// ErrStorage: the storage port reported a state that breaks an
	// invariant (a sealed state, a chosen index past the records).
	ErrStorage = errors.New("paros/paxos: storage state breaks an invariant")
)
