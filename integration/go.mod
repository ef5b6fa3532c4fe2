module github.com/mediajobs/mediajobs/integration

go 1.26

require (
	github.com/getkin/kin-openapi v0.152.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
)
