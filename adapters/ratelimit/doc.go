// Package ratelimit implements ratelimit.Limiter as a sliding window of a minute: Memory (in this
// process, the embedded default) and Redis (a sorted set per key, one budget for every API replica).
package ratelimit
