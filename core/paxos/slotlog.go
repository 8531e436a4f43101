package paxos

// slotLog is a window of per-slot items from base to end, stored in
// fixed-size chunks: growing never copies what is held (a flat slice's
// growth memmoves the whole log), dropping a prefix frees whole chunks, and
// a chunk is allocated only when a slot in it is written, so a slot far
// above the rest costs one chunk, not the gap. The zero T means "nothing at
// this slot".
type slotLog[T any] struct {
	// Invariant: origin <= base <= end; origin is a multiple of
	// slotChunkItems; chunks cover [origin, origin+len(chunks)*slotChunkItems).
	origin Slot
	base   Slot
	end    Slot
	chunks []*[slotChunkItems]T
}

const (
	slotChunkBits  = 9
	slotChunkItems = 1 << slotChunkBits
	slotChunkMask  = slotChunkItems - 1
)

func newSlotLog[T any](base Slot) slotLog[T] {
	o := base &^ slotChunkMask
	return slotLog[T]{origin: o, base: base, end: base}
}

// at returns the item at s, or nil when s is outside the window.
func (l *slotLog[T]) at(s Slot) *T {
	if s < l.base || s >= l.end {
		return nil
	}
	i := s - l.origin
	c := l.chunks[i>>slotChunkBits]
	if c == nil {
		return nil
	}
	return &c[i&slotChunkMask]
}

// ensure grows the window to cover s and returns its item. s >= base.
func (l *slotLog[T]) ensure(s Slot) *T {
	if s < l.base {
		panic("paxos: slotLog.ensure below base")
	}
	i := s - l.origin
	ci := int(i >> slotChunkBits)
	for ci >= len(l.chunks) {
		l.chunks = append(l.chunks, nil)
	}
	if l.chunks[ci] == nil {
		l.chunks[ci] = new([slotChunkItems]T)
	}
	if s >= l.end {
		l.end = s + 1
	}
	return &l.chunks[ci][i&slotChunkMask]
}

// dropBelow forgets every slot below s and moves base to s.
func (l *slotLog[T]) dropBelow(s Slot) {
	if s <= l.base {
		return
	}
	var zero T
	for x := l.base; x < s && x < l.end; x++ {
		if p := l.at(x); p != nil {
			*p = zero
		}
	}
	l.base = s
	if l.end < s {
		l.end = s
	}
	k := int((s - l.origin) >> slotChunkBits)
	if k > len(l.chunks) {
		k = len(l.chunks)
	}
	if k > 0 {
		clear(l.chunks[:k])
		l.chunks = l.chunks[k:]
		l.origin += Slot(k) << slotChunkBits
	}
	if len(l.chunks) == 0 {
		l.chunks = nil
		l.origin = s &^ slotChunkMask
	}
}
