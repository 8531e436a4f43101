package lincheck

// tape is an append-only sequence that states along one search path share.
// A state owns the first n items of buf; pushing onto the state that owns
// the tip of buf extends buf in place, and pushing onto any other state
// (a branch back in the search, or a sibling) copies its n items first.
// Items below a state's n are never written again, so every state keeps
// reading its own prefix: the model stays immutable for porcupine's
// branching search while a search that moves forward pays only for what
// it appends (the log would otherwise be copied at every write).
type tape[T any] struct {
	buf *[]T
	n   int
}

func (t tape[T]) at(i int) T { return (*t.buf)[i] }

func (t tape[T]) slice() []T {
	if t.buf == nil {
		return nil
	}
	return (*t.buf)[:t.n]
}

func (t tape[T]) push(v T) tape[T] {
	if t.buf == nil || len(*t.buf) != t.n {
		own := make([]T, t.n, t.n+16)
		if t.buf != nil {
			copy(own, (*t.buf)[:t.n])
		}
		t.buf = &own
	}
	*t.buf = append(*t.buf, v)
	t.n++
	return t
}
