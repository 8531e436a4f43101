package paxos

import "testing"

// Every input combination of the CTRL table matches exactly one row: no
// case is missed and none is decided twice.
func TestCtrlTableCoversEveryInputOnce(t *testing.T) {
	for _, value := range []bool{false, true} {
		for _, q := range []bool{false, true} {
			for _, answered := range []bool{false, true} {
				in := ctrlInput{valueReported: value, qualifyingQuorum: q, allAnswered: answered}
				rows := 0
				for _, c := range ctrlCases {
					if c.value.matches(value) && c.quorum.matches(q) && c.answered.matches(answered) {
						rows++
					}
				}
				if rows != 1 {
					t.Fatalf("input %+v matches %d rows", in, rows)
				}
				d := decideCtrl(in)
				switch {
				case q && value && d != ctrlRepropose, q && !value && d != ctrlNoop,
					!q && !answered && d != ctrlWait, !q && answered && d != ctrlUnrecoverable:
					t.Fatalf("input %+v decided %s", in, d)
				}
			}
		}
	}
}
