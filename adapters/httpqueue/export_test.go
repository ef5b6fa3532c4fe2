package httpqueue

import "time"

// SetOpenAnswerWithin sets how long Open waits for an answer to begin, until restore.
func SetOpenAnswerWithin(d time.Duration) (restore func()) {
	old := openAnswerWithin
	openAnswerWithin = d
	return func() { openAnswerWithin = old }
}
