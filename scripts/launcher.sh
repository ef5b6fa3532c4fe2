#!/usr/bin/env bash
# Builds the warm sandboxes' launcher, adapters/sandbox/native/launcher.c, as a static binary
# at $1 (default bin/mediajobs-launcher): static, so that it also runs in any container image.
# Needs gcc and glibc's static library (scripts/deps.sh installs gcc and libc6-dev).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/bin/mediajobs-launcher}"
mkdir -p "$(dirname "$out")"
cc="${CC:-gcc}"
if ! command -v "$cc" >/dev/null 2>&1 || [ ! -e "$("$cc" -print-file-name=libc.a)" ]; then
  bash "$root/scripts/deps.sh" run # gcc and libc6-dev, with the rest make run needs
fi
tmp="$out.tmp.$$"
"$cc" -std=c11 -O2 -static -Wall -Wextra -Werror -o "$tmp" "$root/adapters/sandbox/native/launcher.c"
mv -f "$tmp" "$out"
