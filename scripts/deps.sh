#!/usr/bin/env bash
# Installs what mediajobs needs. `scripts/deps.sh run` installs what the service runs with
# (FFmpeg, bubblewrap, fonts, the speech model); `scripts/deps.sh` (for the tests) adds Chromium,
# PostgreSQL, NATS, Redis, debootstrap for the images, Docker Compose, Node and TypeScript for the
# JavaScript packages, and two Go programs built from source (versitygw, the S3 server the tests
# start; gotestsum, which runs `make test` and sums up its skips). Idempotent: it installs only
# what is missing, through apt when run as root, and otherwise names the missing packages and fails.
set -euo pipefail
mode="${1:-test}"
case "$mode" in
  run | test) ;;
  *) echo "deps: usage: scripts/deps.sh [run|test]" >&2; exit 2 ;;
esac

# package -> a file the package provides, used to tell whether it is installed
declare -A probe=(
  [ffmpeg]=/usr/bin/ffmpeg
  [bubblewrap]=/usr/bin/bwrap
  [fonts-inter]=/usr/share/doc/fonts-inter
  [fontconfig]=/usr/bin/fc-match
  [pocketsphinx]=/usr/bin/pocketsphinx_continuous
  [pocketsphinx-en-us]=/usr/share/pocketsphinx/model/en-us
  [espeak-ng]=/usr/bin/espeak-ng
  [ca-certificates]=/etc/ssl/certs/ca-certificates.crt
  # The warm sandboxes' launcher, in C and linked static (scripts/launcher.sh).
  [gcc]=/usr/bin/gcc
  [libc6-dev]=/usr/include/stdlib.h
)
if [ "$mode" = test ]; then
  probe+=(
    [chromium]=/usr/bin/chromium
    # The scale-out adapters' services, which scripts/services.sh starts for the tests.
    [postgresql]=/usr/lib/postgresql
    [nats-server]=/usr/sbin/nats-server
    [redis-server]=/usr/bin/redis-server
    # make images: a Debian base made from Debian's packages, and the compose deployment's tool.
    [debootstrap]=/usr/sbin/debootstrap
    [docker-compose]=/usr/bin/docker-compose
    [iproute2]=/usr/sbin/ip
    # The JavaScript packages' tests (scripts/jstest.sh).
    [nodejs]=/usr/bin/node
    [node-typescript]=/usr/bin/tsc
  )
  # The Docker Engine is the machine's own (its daemon runs before any session); install
  # Debian's when there is none at all.
  if ! command -v docker >/dev/null 2>&1; then
    probe[docker.io]=/usr/bin/docker
  fi
  # Debian ships npm apart from nodejs; a Node from nodejs.org bundles it (and conflicts with it).
  if ! command -v npm >/dev/null 2>&1; then
    probe[npm]=/usr/bin/npm
  fi
fi

missing=()
for pkg in "${!probe[@]}"; do
  [ -e "${probe[$pkg]}" ] || missing+=("$pkg")
done

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "deps: Go 1.26 or newer is required (https://go.dev/dl/); it is not on PATH" >&2
  exit 1
fi

# Go programs built from source by the Go toolchain into go env GOBIN (or GOPATH/bin). The
# version is read from the binary's build information, so a rerun does nothing and a change of
# version rebuilds.
gobin="$(go env GOBIN)"
if [ -z "$gobin" ]; then
  gopath="$(go env GOPATH)"
  gobin="${gopath%%:*}/bin"
fi
goinstall() { # module path, version, package path
  local name
  name="$(basename "$3")"
  if ! go version -m "$gobin/$name" 2>/dev/null |
    grep -Eq "^[[:space:]]+mod[[:space:]]+$1[[:space:]]+$2([[:space:]]|\$)"; then
    echo "deps: building $name $2 into $gobin (once)"
    GOBIN="$gobin" go install "$3@$2"
  fi
}
if [ "$mode" = test ]; then
  # versitygw, the S3-compatible server that the S3 blob store's tests start
  # (adapters/blobs3/s3test) and that the compose deployment's S3 image carries.
  goinstall github.com/versity/versitygw v1.8.0 github.com/versity/versitygw/cmd/versitygw
  # gotestsum runs go test for make test and prints the skipped tests with their reasons.
  goinstall gotest.tools/gotestsum v1.13.0 gotest.tools/gotestsum
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing system packages: ${missing[*]}" >&2
  echo "deps: install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Installing a server package must not start it under an init system this machine may lack;
# scripts/services.sh starts what the tests use, with their settings.
policy=/usr/sbin/policy-rc.d
own_policy=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && own_policy=true
fi
trap '$own_policy && rm -f "$policy"' EXIT
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/mediajobs-apt.log 2>&1; then
  apt-get update -q >/tmp/mediajobs-apt.log 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/mediajobs-apt.log 2>&1 || {
    echo "deps: apt-get failed; see /tmp/mediajobs-apt.log" >&2
    tail -n 20 /tmp/mediajobs-apt.log >&2
    exit 1
  }
fi
