package play

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// A position is its log: replaying the same log twice draws the same
// screen, byte for byte, so undo and shared links are exact.
func TestAPositionIsItsLog(t *testing.T) {
	for _, l := range levels {
		a, err := Play(l.ID, l.Reference, "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := Play(l.ID, l.Reference, "")
		if err != nil {
			t.Fatal(err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("%s: two replays of one log differ", l.ID)
		}
	}
}

// Undo is the log less its last move: the screen before the move.
func TestUndoIsTheLogLessItsLastMove(t *testing.T) {
	l := levels[0]
	before, err := Play(l.ID, l.Reference[:3], "")
	if err != nil {
		t.Fatal(err)
	}
	after, err := Play(l.ID, l.Reference[:3], l.Reference[3])
	if err != nil || after.Rejected != "" {
		t.Fatalf("%v %s", err, after.Rejected)
	}
	undone, err := Play(l.ID, after.Log[:len(after.Log)-1], "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, undone) {
		t.Fatal("undo does not give back the screen before the move")
	}
}

// A wrong answer is refused, counted a mistake, and never reaches the
// world: the log and the screen are the ones before it.
func TestAWrongAnswerNeverEntersTheWorld(t *testing.T) {
	l, _ := levelByID("act4/flexible-quorums")
	log := l.Wrong[:len(l.Wrong)-1]
	before, _ := Play(l.ID, log, "")
	v, err := Play(l.ID, log, l.Wrong[len(l.Wrong)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !v.Mistake || v.Rejected == "" || v.Prompt == nil {
		t.Fatalf("mistake=%v rejected=%q prompt=%v: want a counted mistake with the question still open", v.Mistake, v.Rejected, v.Prompt)
	}
	v.Rejected, v.Mistake = "", false
	if !reflect.DeepEqual(before, v) {
		t.Fatal("a wrong answer changed the position")
	}
}

// An illegal move is refused with a reason and is not a mistake.
func TestAnIllegalMoveIsRefusedNotCounted(t *testing.T) {
	for _, mv := range []string{"deliver 99", "write 2 x", "crash 9", "rot 1 7", "fly 1", " ", "tick", "tick 1 0", "tick 1 999",
		"reconfigure 1 1,2,x", "answer 3", "truncate 1", "wipe 1"} {
		v, err := Play("act3/truncate-by-consensus", []string{"campaign 1", "run"}, mv)
		if err != nil {
			t.Fatalf("%q: %v", mv, err)
		}
		if v.Rejected == "" || v.Mistake || len(v.Log) != 2 {
			t.Errorf("%q: rejected=%q mistake=%v log=%v: want refused, not a mistake, log unchanged", mv, v.Rejected, v.Mistake, v.Log)
		}
	}
}

func TestUnknownLevelsAndBadLogsAreTypedErrors(t *testing.T) {
	if _, err := Play("act9/nope", nil, ""); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("unknown level: %v", err)
	}
	if _, err := Play("act3/truncate-by-consensus", []string{"campaign 1", "deliver 999"}, ""); !errors.Is(err, ErrBadLog) {
		t.Errorf("bad log: %v", err)
	}
	if _, err := Reference("act9/nope"); !errors.Is(err, ErrUnknownLevel) {
		t.Errorf("unknown level's reference: %v", err)
	}
}

// Level ids are unique, and every level has its text, goal and hints.
func TestEveryLevelIsWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range levels {
		if seen[l.ID] {
			t.Errorf("two levels are %s", l.ID)
		}
		seen[l.ID] = true
		if !strings.HasPrefix(l.ID, "act") || l.Title == "" || len(l.Intro) == 0 || l.Goal == "" || l.Hint == nil || l.Check == nil {
			t.Errorf("%s is missing its id form, title, intro, goal, hint or check", l.ID)
		}
	}
}

// No move text, however malformed, panics the world or gets past the
// parser into the core unchecked.
func FuzzPlay(f *testing.F) {
	for _, l := range levels {
		for _, mv := range l.Reference {
			f.Add(l.ID, mv)
		}
	}
	f.Add("act3/the-stranded-node", "rot 3 18446744073709551615")
	f.Add("act4/the-grid", "stray 1 -1")
	f.Fuzz(func(t *testing.T, level, mv string) {
		l, ok := levelByID(level)
		if !ok || mv == "" { // "" tries no move
			return
		}
		log := l.Reference[:len(l.Reference)/2]
		v, err := Play(level, log, mv)
		if err != nil {
			t.Fatalf("a try is never an error: %v", err)
		}
		if v.Rejected == "" && len(v.Log) != len(log)+1 {
			t.Fatalf("an accepted move did not enter the log")
		}
	})
}

// Judging an answer leaves the position as it was, whatever the answer:
// the core's answer is computed on a rebuilt copy.
func TestJudgingLeavesThePositionAlone(t *testing.T) {
	asked := 0
	for _, l := range levels {
		g, err := newGame(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, mv := range l.Reference {
			if p := g.prompt; p != nil {
				asked++
				before, _ := json.Marshal(g.view())
				for _, c := range p.choices {
					p.judge(g, c)
				}
				if after, _ := json.Marshal(g.view()); string(after) != string(before) {
					t.Fatalf("%s: judging %q changed the position", l.ID, p.question)
				}
			}
			if err := g.play(mv); err != nil {
				t.Fatalf("%s: %q: %v", l.ID, mv, err)
			}
		}
	}
	if asked < len(levels) {
		t.Fatalf("only %d questions asked over %d levels' solutions", asked, len(levels))
	}
}
