// Package validator checks a user-written FFmpeg command through eight security layers and, for an
// accepted command, plans how the runner executes it. It imports only the standard library so that
// it compiles to WASM (cmd/wasm) and runs natively, under wazero and in browsers alike.
//
// The layers, each in its own file and named in Error.Layer: syntax (shell-like splitting that
// refuses operators and expansions), flags (an allowlist with arity and stream specifiers), inputs
// (https URLs, uploaded assets and staged names only), formats (allowlists of -f for inputs and
// outputs), filters (an allowlist, parsed with libavfilter's two escaping levels), paths (bare
// names only), limits (compute, timeout, inline size, GPU routing) and outputs (format inference).
//
// Formats and filters are allowlists rather than blocklists: a blocklist fails open on whatever
// the next FFmpeg release adds. Inferred output formats are the spec's 18 formats, plus "m3u8"
// for HLS and "mpd" for DASH (the stream pattern); image sequences and segment-muxer outputs (the
// set pattern) report the format of their members ("png", "ts").
//
// Validate is deterministic: the same command and options give the same Result everywhere, which
// the shared corpus in testdata/corpus.jsonl checks natively and through the WASM builds.
package validator
