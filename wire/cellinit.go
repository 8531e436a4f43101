package wire

import "time"

// CellInitTimeout bounds one CellInit of a cell with the given number of
// journals: 20 s, and a millisecond more per journal. A founder formats
// and boots every journal's store before it answers, and 100,000 journals
// take tens of seconds on a small machine. The member bounds its work by
// it, and a caller waits at least as long (a caller that gave up first and
// retried would be refused "contended" while the first call still runs).
func CellInitTimeout(journals uint32) time.Duration {
	return 20*time.Second + time.Duration(journals)*time.Millisecond
}
