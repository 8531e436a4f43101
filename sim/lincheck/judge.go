package lincheck

import (
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/parosdb/paros/core/journal"
)

// Judgement is a history judged by the journal checker and, when asked,
// by porcupine beside it.
type Judgement struct {
	Verdict Verdict
	// Porcupine is porcupine's answer ("" when it was not asked).
	Porcupine Result
}

// Disagree reports whether porcupine decided the history the other way
// (a timeout is no answer): a bug in one of the two checkers.
func (j Judgement) Disagree() bool {
	return j.Porcupine != "" && j.Porcupine != porcupine.Unknown && j.Porcupine != j.Verdict.Result
}

// Judge decides a history with Decide and, with porcupineTimeout above
// zero, asks porcupine for a second opinion within it. The simulator and
// the black-box tests judge their histories through it.
func Judge(mode journal.WriterMode, ops []Op, porcupineTimeout time.Duration) Judgement {
	j := Judgement{Verdict: Decide(mode, ops)}
	if porcupineTimeout > 0 {
		j.Porcupine = Check(mode, ops, porcupineTimeout)
	}
	return j
}
