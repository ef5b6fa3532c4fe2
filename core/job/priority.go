package job

import (
	"fmt"
	"sort"
	"time"
)

// Priority orders the waiting jobs of a class: every waiting high job is claimed before any
// normal one, and normal before low. Within one priority, accounts take turns (see Order).
type Priority string

const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
)

// ParsePriority turns an untrusted string into a Priority; empty is PriorityNormal.
func ParsePriority(s string) (Priority, error) {
	switch Priority(s) {
	case "":
		return PriorityNormal, nil
	case PriorityLow, PriorityNormal, PriorityHigh:
		return Priority(s), nil
	}
	return "", fmt.Errorf("priority %q is not one of low, normal, high", s)
}

// Rank is the priority as a number, higher first: -1 low, 0 normal, 1 high. Stores keep it so.
func (p Priority) Rank() int {
	switch p {
	case PriorityLow:
		return -1
	case PriorityHigh:
		return 1
	}
	return 0
}

// PriorityOfRank is the Priority a stored Rank stands for.
func PriorityOfRank(r int) Priority {
	switch {
	case r < 0:
		return PriorityLow
	case r > 0:
		return PriorityHigh
	}
	return PriorityNormal
}

// Reprioritise sets a waiting job's priority; a job no longer waiting keeps its own and the
// answer is ErrNotWaiting.
func (j *Job) Reprioritise(p Priority, now time.Time) error {
	if j.Status != StatusWaiting {
		return fmt.Errorf("job %s: %w: it is %s", j.ID, ErrNotWaiting, j.Status)
	}
	j.Priority = p
	j.UpdatedAt = stamp(now)
	return nil
}

// Order sorts the waiting jobs of one class into the order Claim hands them out, the fair-share
// rule every store keeps:
//
//  1. higher priority first;
//  2. then the job's turn: its rank among its own account's waiting jobs of that priority,
//     oldest first (1 for each account's oldest, 2 for its next...), so accounts take turns;
//  3. then, among jobs of the same turn, the account served least recently first: served
//     is when the account's latest job of the class was dispatched (an account never served
//     goes first), so an account that just had a job does not win the next turn on age alone;
//     the jobs of one claim are dispatched a microsecond apart in its order
//     (ClaimParams.Dispatch), so the accounts it served do not tie;
//  4. then the older job (created at, then ID).
//
// served maps account IDs to that time; a missing account was never served.
func Order(waiting []*Job, served map[string]time.Time) {
	type key struct {
		account string
		rank    int
	}
	byAge := append([]*Job(nil), waiting...)
	sort.Slice(byAge, func(a, b int) bool { return byAge[a].Before(byAge[b].CreatedAt, byAge[b].ID) })
	turn := make(map[*Job]int, len(waiting))
	next := map[key]int{}
	for _, j := range byAge {
		k := key{j.AccountID, j.Priority.Rank()}
		next[k]++
		turn[j] = next[k]
	}
	sort.SliceStable(waiting, func(a, b int) bool {
		x, y := waiting[a], waiting[b]
		if rx, ry := x.Priority.Rank(), y.Priority.Rank(); rx != ry {
			return rx > ry
		}
		if turn[x] != turn[y] {
			return turn[x] < turn[y]
		}
		sx, okx := served[x.AccountID]
		sy, oky := served[y.AccountID]
		switch {
		case okx != oky:
			return !okx
		case okx && !sx.Equal(sy):
			return sx.Before(sy)
		}
		return x.Before(y.CreatedAt, y.ID)
	})
}
