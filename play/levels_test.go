package play

import (
	"errors"
	"strings"
	"testing"
)

// Every level's recorded solution reaches its goal, through the same
// entry the page uses, one move at a time.
func TestEveryReferenceSolutionReachesItsGoal(t *testing.T) {
	for _, l := range levels {
		t.Run(l.ID, func(t *testing.T) {
			var log []string
			for i, mv := range l.Reference {
				v, err := Play(l.ID, log, mv)
				if err != nil {
					t.Fatal(err)
				}
				if v.Rejected != "" {
					t.Fatalf("move %d %q refused: %s", i+1, mv, v.Rejected)
				}
				log = v.Log
				if v.Status == Failed {
					t.Fatalf("move %d %q failed the level: %s", i+1, mv, v.Verdict)
				}
				if i == len(l.Reference)-1 && v.Status != Reached {
					t.Fatalf("the solution ends %s: %s (hint: %s)", v.Status, v.Verdict, v.Hint)
				}
			}
		})
	}
}

func TestDebugLevel(t *testing.T) {
	l := levels[0]
	g, err := replay(l, l.Reference)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range g.timeline {
		t.Logf("%d %s: %s", e.N, e.Move, e.Text)
	}
	v := g.view()
	for _, m := range v.Machines {
		t.Logf("%+v", m)
	}
	_ = errors.New
}

// Every level's wrong path ends as the level says it must: failed, with a
// sentence, or refused as a wrong answer that explains with numbers.
func TestEveryWrongPathIsCaught(t *testing.T) {
	for _, l := range levels {
		t.Run(l.ID, func(t *testing.T) {
			if len(l.Wrong) == 0 {
				t.Fatal("the level records no wrong path")
			}
			v, err := Play(l.ID, l.Wrong[:len(l.Wrong)-1], l.Wrong[len(l.Wrong)-1])
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case v.Mistake:
				if !strings.ContainsAny(v.Rejected, "0123456789") {
					t.Errorf("a wrong answer is explained without the position's numbers: %q", v.Rejected)
				}
			case v.Status == Failed:
				if v.Verdict == "" {
					t.Error("a failed level says nothing")
				}
			default:
				t.Fatalf("the wrong path ends %s (rejected %q): want failed or a wrong answer", v.Status, v.Rejected)
			}
			t.Logf("%s%s", v.Verdict, v.Rejected)
		})
	}
}

// Every move of every reference solution is offered as a button where the
// solution plays it, so a player can win every level by clicks alone.
func TestEveryReferenceMoveIsAButton(t *testing.T) {
	for _, l := range levels {
		t.Run(l.ID, func(t *testing.T) {
			var log []string
			for i, mv := range l.Reference {
				v, err := Play(l.ID, log, "")
				if err != nil {
					t.Fatal(err)
				}
				offered := false
				for _, b := range v.Moves {
					offered = offered || b.Move == mv
				}
				if !offered {
					t.Fatalf("move %d %q is not among the buttons %v", i+1, mv, v.Moves)
				}
				log = append(log, mv)
			}
		})
	}
}
