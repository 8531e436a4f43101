package play

import (
	"errors"
	"fmt"
)

// ErrUnknownLevel is the answer for a level id no level has.
var ErrUnknownLevel = errors.New("paros/play: no such level")

// ErrBadLog is the answer for a move log that does not replay: a move that
// is not legal where the log plays it. A log the page kept is always
// legal; a hand-edited or stale URL may not be.
var ErrBadLog = errors.New("paros/play: the moves do not replay")

// Levels lists every level, in play order.
func Levels() []LevelSummary {
	out := make([]LevelSummary, 0, len(levels))
	for _, l := range levels {
		out = append(out, LevelSummary{ID: l.ID, Act: l.Act, Title: l.Title, Goal: l.Goal})
	}
	return out
}

// Play rebuilds the level from its setup, replays log (the moves accepted
// so far) and then tries one more move, try (empty: none). The world is
// deterministic, so a position is its log: undo is the log less its last
// move, and a shared URL replays to the same screen. A try that is illegal
// or a wrong answer is not played: the view is the position before it,
// with Rejected saying why (Mistake set for a wrong answer).
func Play(level string, log []string, try string) (View, error) {
	l, ok := levelByID(level)
	if !ok {
		return View{}, fmt.Errorf("%w: %q", ErrUnknownLevel, level)
	}
	g, err := replay(l, log)
	if err != nil {
		return View{}, err
	}
	var rejected string
	var mistake bool
	if try != "" {
		if err := g.play(try); err != nil {
			var wrong *WrongAnswer
			if errors.As(err, &wrong) {
				mistake = true
			}
			rejected = err.Error()
			// The world may have moved while the move was refused
			// halfway: rebuild it from the log.
			if g, err = replay(l, log); err != nil {
				return View{}, err
			}
		}
	}
	v := g.view()
	v.Rejected, v.Mistake = rejected, mistake
	return v, nil
}

// Reference is the level's recorded solution: the moves that reach its goal.
func Reference(level string) ([]string, error) {
	l, ok := levelByID(level)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLevel, level)
	}
	return append([]string(nil), l.Reference...), nil
}

// replay builds the level and plays log.
func replay(l *Level, log []string) (*game, error) {
	g, err := newGame(l)
	if err != nil {
		return nil, fmt.Errorf("paros/play: set up %s: %w", l.ID, err)
	}
	for i, mv := range log {
		if err := g.play(mv); err != nil {
			return nil, fmt.Errorf("%w: move %d %q: %v", ErrBadLog, i+1, mv, err)
		}
	}
	return g, nil
}

// WrongAnswer is a prompt answered otherwise than the core answers it. It
// never reaches the core; Why explains with the position's numbers.
type WrongAnswer struct {
	Why string
}

func (w *WrongAnswer) Error() string { return "not what the core does: " + w.Why }
