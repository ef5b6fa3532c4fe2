// Package httpapi is the REST driver of the service: bunrouter routes over service.Service,
// bearer authentication, the { data } / { error } envelopes and signed-URL downloads.
package httpapi
