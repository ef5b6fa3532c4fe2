// Package urlsign signs and verifies the download URLs of job outputs with HMAC-SHA256:
// /dl/<job>?token= for a single file, /v/<job>/<token>/<file> for stream and set members.
// The members a re-signed playlist names carry member tokens, bound to the expiry of the link
// their holder began with.
package urlsign
