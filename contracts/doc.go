// Package contracts holds the API's OpenAPI 3.1 document (openapi.yaml), served as JSON by the
// REST API, and a ResponseValidator that checks real responses against it.
package contracts
