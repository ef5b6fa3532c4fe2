#!/usr/bin/env bash
# Runs the JavaScript packages' tests (js/): every test file with Node's own runner, against the
# real binary bin/mediajobs and the validator.wasm `make wasm` built; the client's declarations
# type-checked by tsc against its example program; and each package's npm pack tarball, made
# offline and listed. Needs Debian's nodejs, npm (or Node's bundled one) and node-typescript;
# run `make build` first.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in node npm tsc go; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "jstest: ${missing[*]} not found (Debian: apt-get install nodejs npm node-typescript)" >&2
  exit 1
fi
if [ ! -x bin/mediajobs ]; then
  echo "jstest: bin/mediajobs is missing: run make build" >&2
  exit 1
fi
wasm=validator/cmd/wasm/validator.wasm
if [ ! -f "$wasm" ]; then
  echo "jstest: $wasm is missing: run make wasm" >&2
  exit 1
fi
# The tests run the binary as it is: say so when sources changed after it was built.
if [ -n "$(find apps web core adapters validator contracts *.go -newer bin/mediajobs -type f \( -name '*.go' -o -path 'web/*' \) -print -quit)" ]; then
  echo "jstest: warning: sources changed after bin/mediajobs was built; make build rebuilds it" >&2
fi

# The package ships the module make wasm built (js/.gitignore keeps the copy out of git).
cp "$wasm" js/validator/validator.wasm

# The native validator's answers, once, for the corpus tests under Node and in Chromium.
native=$(mktemp)
trap 'rm -f "$native"' EXIT
(cd validator && go run ./validatortest/cmd/nativeanswers) >"$native"

export MEDIAJOBS_BINARY="$PWD/bin/mediajobs"
export MEDIAJOBS_NATIVE_ANSWERS="$native"

echo "== tsc: js/client declarations against examples/typecheck.ts"
tsc -p js/client

echo "== node --test"
node --test \
  js/validator/test/*.test.js \
  js/client/test/*.test.js \
  js/examples/edge-gate/*.test.js \
  js/test/*.test.js
