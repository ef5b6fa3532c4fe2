package httpapi

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/mediajobs/mediajobs/core/job"
	"github.com/mediajobs/mediajobs/core/problem"
)

// pageQuery checks a listing's query string: only cursor, limit and the listing's own filters
// (extra), each given once, and a limit from 1 to job.MaxListLimit (0 when absent). Every
// listing of the API answers a mistake here with the same VALIDATION_ERROR wording.
func pageQuery(q url.Values, extra ...string) (cursor string, limit int, err error) {
	known := append(append([]string{}, extra...), "cursor", "limit")
	for name, vals := range q {
		if !contains(known, name) {
			return "", 0, problem.Reject(problem.CodeValidation, "query parameter %q is not known; use %s", name, orList(known))
		}
		if len(vals) > 1 {
			return "", 0, problem.Reject(problem.CodeValidation, "query parameter %s is given %d times; give it once", name, len(vals))
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > job.MaxListLimit {
			return "", 0, problem.Reject(problem.CodeValidation, "limit %q must be an integer from 1 to %d", l, job.MaxListLimit)
		}
		limit = n
	}
	return q.Get("cursor"), limit, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// orList writes ["status" "type" "cursor" "limit"] as "status, type, cursor or limit".
func orList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// onlyParam refuses a query that names a parameter other than name, or name more than once.
func onlyParam(q url.Values, name string) error {
	for n, vals := range q {
		if n != name {
			return problem.Reject(problem.CodeValidation, "query parameter %q is not known; use %s", n, name)
		}
		if len(vals) > 1 {
			return problem.Reject(problem.CodeValidation, "query parameter %s is given %d times; give it once", name, len(vals))
		}
	}
	return nil
}
