package paxos

// slotLog is a dense window of per-slot items starting at base. The zero T
// means "nothing at this slot".
type slotLog[T any] struct {
	base  Slot // Invariant: base >= 1.
	items []T
}

func newSlotLog[T any](base Slot) slotLog[T] { return slotLog[T]{base: base} }

// end is one past the highest slot the window covers.
func (l *slotLog[T]) end() Slot { return l.base + Slot(len(l.items)) }

// at returns the item at s, or nil when s is outside the window.
func (l *slotLog[T]) at(s Slot) *T {
	if s < l.base || s >= l.end() {
		return nil
	}
	return &l.items[s-l.base]
}

// ensure grows the window to cover s and returns its item. s >= base.
func (l *slotLog[T]) ensure(s Slot) *T {
	if s < l.base {
		panic("paxos: slotLog.ensure below base")
	}
	for s >= l.end() {
		var zero T
		l.items = append(l.items, zero)
	}
	return &l.items[s-l.base]
}

// dropBelow forgets every slot below s and moves base to s.
func (l *slotLog[T]) dropBelow(s Slot) {
	if s <= l.base {
		return
	}
	if s >= l.end() {
		clear(l.items)
		l.items = l.items[:0]
		l.base = s
		return
	}
	k := int(s - l.base)
	var zero T
	for i := range k {
		l.items[i] = zero
	}
	l.items = l.items[k:]
	if cap(l.items) > 64 && len(l.items) < cap(l.items)/4 {
		l.items = append(make([]T, 0, 2*len(l.items)+8), l.items...)
	}
	l.base = s
}
