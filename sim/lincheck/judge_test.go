package lincheck

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// Two checkers disagree only when both decided, the other way; a porcupine
// timeout or no second opinion at all is no disagreement.
func TestJudgementDisagree(t *testing.T) {
	for _, tc := range []struct {
		decide, porcupine Result
		want              bool
	}{
		{porcupine.Ok, "", false},
		{porcupine.Ok, porcupine.Ok, false},
		{porcupine.Ok, porcupine.Unknown, false},
		{porcupine.Ok, porcupine.Illegal, true},
		{porcupine.Illegal, porcupine.Ok, true},
		{porcupine.Illegal, porcupine.Illegal, false},
	} {
		j := Judgement{Verdict: Verdict{Result: tc.decide}, Porcupine: tc.porcupine}
		if got := j.Disagree(); got != tc.want {
			t.Errorf("Decide %s, porcupine %q: Disagree() = %v, want %v", tc.decide, tc.porcupine, got, tc.want)
		}
	}
}
