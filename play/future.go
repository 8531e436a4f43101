package play

// future rebuilds the position from its log and lets f run it on: the
// answer the core gives, computed on a copy that the player never sees
// and that never feeds back into the position. The world is
// deterministic, so the copy is the position exactly.
func (g *game) future(f func(*game)) *game {
	c, err := replay(g.level, g.log)
	if err != nil {
		panic("paros/play: a position does not replay its own log: " + err.Error())
	}
	c.prompt = nil
	f(c)
	return c
}

// settle lets the cell run on by itself: the leader's clock beats and
// every message is delivered, a few times over, until nothing is in flight.
func (g *game) settle() {
	for range 4 {
		if l := g.leader(); l != nil {
			_ = g.tick(l)
		}
		if g.rec != nil {
			g.rec.Tick()
			g.pumpHandover()
		}
		for n := 0; len(g.pool) > 0 && n < quietMax; n++ {
			fl := g.pool[0]
			g.pool = g.pool[1:]
			g.deliverFlight(fl)
		}
	}
}
