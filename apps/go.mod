module github.com/mediajobs/mediajobs/apps

go 1.26

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/chromedp/chromedp v0.23.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
)

require (
	github.com/mediajobs/mediajobs/adapters v0.0.0
	github.com/mediajobs/mediajobs/contracts v0.0.0
	github.com/mediajobs/mediajobs/core v0.0.0
	github.com/mediajobs/mediajobs/validator v0.0.0
)

replace (
	github.com/mediajobs/mediajobs/adapters => ../adapters
	github.com/mediajobs/mediajobs/contracts => ../contracts
	github.com/mediajobs/mediajobs/core => ../core
	github.com/mediajobs/mediajobs/validator => ../validator
)
