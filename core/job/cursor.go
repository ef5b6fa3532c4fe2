package job

import (
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/mediajobs/mediajobs/core/problem"
)

// Every listing of the service (jobs, deliveries, batches) is newest first by (CreatedAt, ID),
// so a page ends at such a pair and the next starts after it. KeysetCursor and ParseKeysetCursor
// are that position's one opaque form; each listing wraps them with its own ID prefix.

// KeysetCursor makes the opaque cursor of the position (t, id).
func KeysetCursor(t time.Time, id string) string {
	raw := strconv.FormatInt(t.UnixMicro(), 10) + "|" + id
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseKeysetCursor reads a cursor made by KeysetCursor for an ID with the given prefix
// ("job_"). Anything else is a VALIDATION_ERROR naming it.
func ParseKeysetCursor(s, idPrefix string) (time.Time, string, error) {
	bad := problem.Reject(problem.CodeValidation, "cursor %q is not a cursor this service returned", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", bad
	}
	us, id, ok := strings.Cut(string(raw), "|")
	if !ok || !strings.HasPrefix(id, idPrefix) {
		return time.Time{}, "", bad
	}
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return time.Time{}, "", bad
	}
	return time.UnixMicro(n).UTC(), id, nil
}

// SortsAfter reports whether the row (t, id) comes after the position (at, atID) in a
// newest-first listing: it is older, or as old with a smaller ID.
func SortsAfter(t time.Time, id string, at time.Time, atID string) bool {
	return t.Before(at) || (t.Equal(at) && id < atID)
}

// EncodeCursor makes the cursor that follows j in a newest-first listing of jobs.
func EncodeCursor(j *Job) string { return KeysetCursor(j.CreatedAt, j.ID) }

// DecodeCursor reads a cursor made by EncodeCursor; anything else is a VALIDATION_ERROR.
func DecodeCursor(s string) (time.Time, string, error) { return ParseKeysetCursor(s, "job_") }

// Before reports whether j sorts after the cursor position (t, id) in a newest-first listing.
func (j *Job) Before(t time.Time, id string) bool { return SortsAfter(j.CreatedAt, j.ID, t, id) }
