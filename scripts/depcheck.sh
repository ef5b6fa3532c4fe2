#!/usr/bin/env bash
# The dependency rule of ARCHITECTURE.md: core and validator import only the standard library
# (go-cmp is allowed for the shared port test suites such as core/job/jobtest)
# (core may import validator); nothing under adapters imports apps; nothing imports integration.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
for mod in core validator; do
  bad=$(cd "$mod" && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' ./... |
    grep -v -E '^github.com/mediajobs/mediajobs/(core|validator)(/|$)' |
    grep -v -E '^github.com/google/go-cmp(/|$)' || true)
  if [ -n "$bad" ]; then
    echo "depcheck: $mod imports beyond the standard library:" >&2
    echo "$bad" | sed 's/^/  /' >&2
    fail=1
  fi
done
bad=$(cd adapters && go list -deps -test -f '{{.ImportPath}}' ./... | grep -E '^github.com/mediajobs/mediajobs/apps(/|$)' || true)
if [ -n "$bad" ]; then
  echo "depcheck: adapters import apps: $bad" >&2
  fail=1
fi
for mod in core validator adapters apps contracts; do
  bad=$(cd "$mod" && go list -deps -test -f '{{.ImportPath}}' ./... | grep -E '^github.com/mediajobs/mediajobs/integration(/|$)' || true)
  if [ -n "$bad" ]; then
    echo "depcheck: $mod imports integration: $bad" >&2
    fail=1
  fi
done
exit $fail
