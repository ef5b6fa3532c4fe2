// Package jobtype holds the registry of job types and the request shape {type, inputs, params}
// every type is submitted with. Each type validates its own inputs and params.
package jobtype
