#!/usr/bin/env bash
# Installs the system packages mediajobs needs. Idempotent: it installs only what is missing,
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
