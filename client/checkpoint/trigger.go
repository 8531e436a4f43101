package checkpoint

// DefaultFactor is k in the owner's rule "checkpoint once the log since the
// last checkpoint is k times the state's size": the retained log stays a
// bounded multiple of the state, and checkpoints add about 1/k to the bytes
// written.
const DefaultFactor = 4

// Trigger says when an owner checkpoints: once the log bytes written since
// the last checkpoint reach Factor times the state's size (and at least
// LogBytesMin), or once TicksMax ticks passed with anything written. It is
// pure: the caller counts the bytes and the ticks.
type Trigger struct {
	// Factor is k; 0 means DefaultFactor.
	Factor int
	// LogBytesMin keeps a tiny state from checkpointing after every entry.
	LogBytesMin int
	// TicksMax is the time bound in the caller's ticks; 0: none.
	TicksMax uint64
}

// Due reports whether to checkpoint now, given the log bytes written since
// the last checkpoint, the state's encoded size and the ticks since the last
// checkpoint. Nothing written since the last checkpoint is never due.
func (t Trigger) Due(logBytes, stateBytes int, ticks uint64) bool {
	if logBytes <= 0 {
		return false
	}
	k := t.Factor
	if k <= 0 {
		k = DefaultFactor
	}
	if logBytes >= t.LogBytesMin && logBytes/k >= stateBytes {
		return true
	}
	return t.TicksMax > 0 && ticks >= t.TicksMax
}
