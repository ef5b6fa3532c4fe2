// Package mediajobs is the whole media job service as a library: the same composition
// `mediajobs serve` runs, opened inside your own Go program.
//
// # Adding the dependency
//
//	go get github.com/mediajobs/mediajobs@latest
//
// The repository is a set of modules released together under one version: the root module
// (this package, the composition and the web pages), core (the domain and its ports), validator
// (the FFmpeg command validator, also built to WASM), adapters (SQLite and PostgreSQL, blobs,
// the sandbox, HTTP, MCP, brokers) and contracts (the OpenAPI document and the Go client). Each
// release tags them all (v1.2.3, core/v1.2.3, validator/v1.2.3, adapters/v1.2.3,
// contracts/v1.2.3) and each go.mod requires its siblings at that version. No library go.mod
// holds a replace line: inside the repository go.work resolves the siblings (and `make tidy`
// adds replaces for go mod tidy's run only). `make release-check` proves a module outside the
// repository can depend on them.
//
// # Opening the service
//
// Open composes the service from a Config. DefaultConfig gives what `mediajobs serve` starts
// with (each field from its MEDIAJOBS_* variable, else the built-in default): the embedded
// default of SQLite and local blobs under Config.Data, and the sandboxed in-process runner.
//
//	cfg := mediajobs.DefaultConfig()
//	cfg.Data, cfg.BaseURL = "/var/lib/cards", "https://cards.example.com"
//	svc, err := mediajobs.Open(ctx, cfg)
//	if err != nil { ... }
//	defer svc.Close()
//	wait, err := svc.Start(ctx) // the relay, lease sweeps, grants, fan-out and the runner
//	if err != nil { ... }
//	defer wait()
//
// App.UC holds the use cases (App.UC.Submit, App.UC.Jobs, App.UC.Cancel, App.UC.Uploads,
// App.UC.Webhooks, App.UC.Credits, App.UC.Batches, App.UC.Auth, App.UC.Workers), called with
// an account.Account your program holds; App.Handler is the REST API, MCP, the console and the
// signed file links (/dl/, /v/), to mount whole or in part on your own router. App.Run serves
// App.Handler on a listener and runs the background work, as `serve` does.
//
// The example in apps/examples/embed is a complete program: a small service of its own whose
// handlers submit jobs through the use cases and hand out mediajobs' signed links.
package mediajobs
