module github.com/mediajobs/mediajobs/core

go 1.26

require github.com/google/go-cmp v0.7.0

require github.com/mediajobs/mediajobs/validator v0.0.0
