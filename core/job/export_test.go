package job

import "time"

// NewIDSource returns an ID maker of its own, which a test can call at times it chooses without
// the IDs that other tests make at the same moment through NewID continuing its sequence.
func NewIDSource() func(prefix string, now time.Time) string { return new(idSource).next }
