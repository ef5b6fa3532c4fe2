module github.com/mediajobs/mediajobs/contracts

go 1.26
