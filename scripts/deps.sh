#!/usr/bin/env bash
# Installs the system packages mediajobs needs, and versitygw for the tests. Idempotent: it installs only what is missing,
# through apt when run as root, and otherwise names the missing packages and fails.
set -euo pipefail

# package -> a file the package provides, used to tell whether it is installed
declare -A probe=(
  [ffmpeg]=/usr/bin/ffmpeg
  [bubblewrap]=/usr/bin/bwrap
  [fonts-inter]=/usr/share/doc/fonts-inter
  [fontconfig]=/usr/bin/fc-match
  [pocketsphinx]=/usr/bin/pocketsphinx_continuous
  [pocketsphinx-en-us]=/usr/share/pocketsphinx/model/en-us
  [espeak-ng]=/usr/bin/espeak-ng
  [chromium]=/usr/bin/chromium
  [ca-certificates]=/etc/ssl/certs/ca-certificates.crt
)

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

# versitygw, the S3-compatible server that the S3 blob store's tests start (adapters/blobs3/s3test),
# built from source by the Go toolchain into go env GOBIN (or GOPATH/bin). Its version is read
# from the binary's build information, so a rerun does nothing and a change of version rebuilds.
VERSITYGW_VERSION=v1.8.0
gobin="$(go env GOBIN)"
if [ -z "$gobin" ]; then
  gopath="$(go env GOPATH)"
  gobin="${gopath%%:*}/bin"
fi
if ! go version -m "$gobin/versitygw" 2>/dev/null |
  grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$VERSITYGW_VERSION([[:space:]]|\$)"; then
  echo "deps: building versitygw $VERSITYGW_VERSION into $gobin (once; a few minutes)"
  GOBIN="$gobin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
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
if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/mediajobs-apt.log 2>&1; then
  apt-get update -q >/tmp/mediajobs-apt.log 2>&1
  apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/mediajobs-apt.log 2>&1 || {
    echo "deps: apt-get failed; see /tmp/mediajobs-apt.log" >&2
    tail -n 20 /tmp/mediajobs-apt.log >&2
    exit 1
  }
fi
