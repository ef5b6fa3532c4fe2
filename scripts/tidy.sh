#!/usr/bin/env bash
# go mod tidy in every module. The library modules (the root, core, validator, adapters,
# contracts) require one another with no replace line, as a program outside the repository
# needs them: inside it go.work resolves the siblings, but go mod tidy reads no go.work, so each
# library gets replace lines for its run only. apps and integration are no one's dependency and
# keep theirs.
set -euo pipefail
cd "$(dirname "$0")/.."
libs=(core validator adapters contracts)
for m in . "${libs[@]}" apps integration; do
  (
    cd "$m"
    up=..; [ "$m" = . ] && up=.
    args=()
    if [ "$m" != apps ] && [ "$m" != integration ]; then
      for l in "${libs[@]}"; do
        [ "$l" = "$m" ] || args+=("-replace=github.com/mediajobs/mediajobs/$l=$up/$l")
      done
    fi
    [ ${#args[@]} -eq 0 ] || go mod edit "${args[@]}"
    status=0
    go mod tidy || status=$?
    for a in "${args[@]}"; do go mod edit "-dropreplace=$(echo "${a#-replace=}" | cut -d= -f1)"; done
    exit $status
  )
done
