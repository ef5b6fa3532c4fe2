package job

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EncodeCursor makes the opaque cursor that follows a job in a newest-first listing: jobs are
// ordered by (CreatedAt, ID) descending, so the position is that pair.
func EncodeCursor(j *Job) string {
	raw := strconv.FormatInt(j.CreatedAt.UnixMicro(), 10) + "|" + j.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor reads a cursor made by EncodeCursor. A cursor that is not one is a
// VALIDATION_ERROR naming it.
func DecodeCursor(s string) (time.Time, string, error) {
	bad := Reject(CodeValidation, "cursor %q is not a cursor this service returned", s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return time.Time{}, "", bad
	}
	us, id, ok := strings.Cut(string(raw), "|")
	if !ok || !strings.HasPrefix(id, "job_") {
		return time.Time{}, "", bad
	}
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w", bad)
	}
	return time.UnixMicro(n).UTC(), id, nil
}

// Before reports whether j sorts after the cursor position (t, id) in a newest-first listing.
func (j *Job) Before(t time.Time, id string) bool {
	return j.CreatedAt.Before(t) || (j.CreatedAt.Equal(t) && j.ID < id)
}
