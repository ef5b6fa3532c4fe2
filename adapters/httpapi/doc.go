// Package httpapi is the REST driver of the service: bunrouter routes over the use cases of core/service (httpapi.UseCases),
// bearer authentication, the { data } / { error } envelopes and signed-URL downloads.
package httpapi
