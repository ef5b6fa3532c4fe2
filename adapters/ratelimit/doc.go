// Package ratelimit implements ratelimit.Limiter: Memory (GCRA in this process, the embedded
// default) and Redis (GCRA in Redis through redis_rate, one budget for every API replica).
package ratelimit
