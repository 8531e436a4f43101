package play

import (
	"os"
	"strings"
	"testing"
)

// PLAY_DEBUG="level|move;move;..." prints the position a log reaches.
func TestDebugPosition(t *testing.T) {
	spec := os.Getenv("PLAY_DEBUG")
	if spec == "" {
		t.Skip("PLAY_DEBUG not set")
	}
	id, moves, _ := strings.Cut(spec, "|")
	var log []string
	if moves != "" {
		log = strings.Split(moves, ";")
	}
	l, _ := levelByID(id)
	g, err := replay(l, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range g.timeline {
		t.Logf("%d %s: %s", e.N, e.Move, e.Text)
	}
	v := g.view()
	for _, m := range v.Machines {
		t.Logf("machine %s %s %s p=%s floor=%d chosen=%d notes=%v log=%v", m.ID, m.Kind, m.Role, m.Promised, m.Floor, m.Chosen, m.Notes, m.Log)
	}
	for _, m := range v.InFlight {
		t.Logf("inflight %d: %s", m.ID, m.Text)
	}
	st, why := l.Check(g)
	t.Logf("status %s: %s; prompt %+v", st, why, v.Prompt)
}

func TestDebugPool(t *testing.T) {
	spec := os.Getenv("PLAY_POOL")
	if spec == "" {
		t.Skip()
	}
	id, moves, _ := strings.Cut(spec, "|")
	l, _ := levelByID(id)
	g, err := replay(l, strings.Split(moves, ";"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range g.pool {
		t.Logf("%d %s history=%v", f.id, f.msg, f.msg.History)
	}
}
