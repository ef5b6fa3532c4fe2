// Package validator checks a user-written FFmpeg command through nine security layers and, for an
// accepted command, plans how the runner executes it. It imports only the standard library so that
// it compiles to WASM (cmd/wasm) and runs natively, under wazero and in browsers alike.
//
// The layers, each in its own file and named in Error.Layer: syntax (shell-like splitting that
// refuses operators and expansions), flags (an allowlist with arity, stream specifiers and a
// reason for each flag), inputs (https URLs on public hosts, refusing every spelling of a
// non-public address and localhost names, uploaded assets and bare names; a bare name not
// staged is a required input, Result.RequiredInputs), formats (allowlists of -f for inputs and
// outputs), filters (an allowlist, parsed with libavfilter's two escaping levels), options (one
// rule for every filter option: no absolute path, "..", protocol or system location), paths (bare
// names only; -hls_base_url a relative name), limits (compute, timeout, inline size, GPU
// routing, and commands that only burn resources: endless inputs without a bound, absurd
// threads, frame sizes and rates) and outputs (format inference).
//
// Formats and filters are allowlists rather than blocklists: a blocklist fails open on whatever
// the next FFmpeg release adds. Inferred output formats are the spec's 18 formats, everyday
// containers beyond them (flv, mka, nut, mpg, ...), "m3u8" for HLS and "mpd" for DASH (the stream
// pattern); image sequences and segment-muxer outputs (the
// set pattern) report the format of their members ("png", "ts").
//
// Splittable says whether an accepted command's encode can be split at the input's keyframes,
// the parts encoded apart and joined by stream copy with the same frames (or names what
// prevents it), and SplitCommands writes those parts', audio's and join's commands (split.go).
//
// Validate is deterministic: the same command and options give the same Result everywhere, which
// the corpora in testdata (corpus.jsonl, realworld.jsonl with each command's source, attacks.jsonl)
// and the address table (validatortest.Addresses) check natively, through the WASM builds and
// through POST /ffmpeg/validate.
package validator
