#!/usr/bin/env bash
# The dependency rule of ARCHITECTURE.md: core and validator import only the standard library
# (go-cmp is allowed for the shared port test suites such as core/job/jobtest)
# (core may import validator); nothing under adapters imports apps; nothing imports integration;
# and the modules require one another along the design's graph only (no cycle).
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
# The module graph: each module requires only the siblings the design lets it import, so the
# graph has no cycle and a program that requires the root module fetches no test-only module.
declare -A allowed=(
  [validator]=""
  [core]="validator"
  [contracts]="core validator"
  [adapters]="core validator contracts"
  [.]="core validator adapters contracts"
  [apps]=". core validator adapters contracts"
  [integration]=". apps core validator adapters contracts"
)
for mod in "${!allowed[@]}"; do
  for req in $(cd "$mod" && go mod edit -print |
      awk '/^require \(/{r=1; next} r && /^\)/{r=0} r{print $1} /^require [^(]/{print $2}' |
      grep -E '^github.com/mediajobs/mediajobs(/|$)' | sort -u); do
    name=${req#github.com/mediajobs/mediajobs}
    name=${name#/}
    [ -z "$name" ] && name=.
    case " ${allowed[$mod]} " in
      *" $name "*) ;;
      *) echo "depcheck: module $mod requires $req, which the module graph does not allow" >&2; fail=1 ;;
    esac
  done
done
exit $fail
