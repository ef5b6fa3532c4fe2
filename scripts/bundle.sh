#!/usr/bin/env bash
# Packs what the integration tests and BenchmarkSplit need into one archive, var/bundle.tar.xz,
# for an x86-64 Linux machine that has neither Go nor Debian's packages (a GPU host, a bigger
# machine lent for a measurement): mediajobs and its launcher, the integration test binary, a
# small FFmpeg built here from Debian's own source (libx264, AAC, NVENC, every native codec and
# filter; FFmpeg's own libraries linked in, needing only libc, libm, libz and libx264), bubblewrap,
# prlimit, taskset, fc-list and the Inter fonts, with the libraries they need beyond glibc.
#
# Debian's FFmpeg links some 200 libraries (233 MB); this one four. On the other machine,
# in a copy of this checkout: `bash scripts/bundle-run.sh` (root: it installs into /usr/bin).
# Needs root here (apt) and what scripts/deps.sh installs, which make bundle runs first.
# Idempotent: FFmpeg is built once per Debian version of it (var/bundle/).
#
# BASE=REF also packs mediajobs as built from the commit REF (base/mediajobs, beside its
# launcher), so that scripts/bundle-run.sh can alternate the two builds in one lease: a lent
# machine's cores differ from lease to lease, so a change is measured against its baseline on
# the same machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
work="$root/var/bundle"
mkdir -p "$work"

# What building FFmpeg needs beyond scripts/deps.sh (which make bundle runs first: Go, bubblewrap,
# fontconfig, the fonts), and a deb-src entry for apt-get source.
need=()
for p in libx264-dev libffmpeg-nvenc-dev nasm dpkg-dev xz-utils; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
# (grep reads the whole list: grep -q would end the pipe early, and pipefail take that as a miss.)
src=/etc/apt/sources.list.d/mediajobs-deb-src.sources
if ! apt-cache showsrc ffmpeg 2>/dev/null | grep '^Version:' >/dev/null; then
  codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$codename" "$codename" "$codename" >"$src"
  apt-get update -q >/dev/null
fi
if ((${#need[@]})); then
  echo "bundle: installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi

version="$(apt-cache showsrc ffmpeg | sed -n 's/^Version: //p' | sort -V | tail -1)"
ff="$work/ffmpeg-${version#*:}"
if [ ! -x "$ff/bin/ffmpeg" ]; then
  echo "bundle: building FFmpeg $version from Debian's source (once; 5 to 10 minutes on 2 cores)"
  rm -rf "$work/src" && mkdir -p "$work/src"
  # apt-get source unpacks the source with Debian's patches applied (dpkg-source -x).
  (cd "$work/src" && apt-get source "ffmpeg=$version" >/dev/null 2>&1)
  (cd "$work"/src/ffmpeg-*/ &&
    ./configure --prefix="$ff" --disable-autodetect --enable-gpl --enable-libx264 --enable-zlib \
      --enable-ffnvcodec --enable-nvenc --disable-doc --disable-ffplay --disable-debug \
      --enable-static --disable-shared >"$work/configure.log" 2>&1 &&
    make -j"$(nproc)" >"$work/make.log" 2>&1 && make install >>"$work/make.log" 2>&1) ||
    { echo "bundle: building FFmpeg failed; see $work/configure.log and $work/make.log" >&2; exit 1; }
  rm -rf "$work/src"
fi

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/bin "$stage"/lib "$stage"/fonts "$stage"/etc
echo "bundle: building mediajobs and the integration tests"
(cd apps && go build -trimpath -ldflags '-s -w' -o "$stage/bin/" ./cmd/mediajobs)
bash scripts/launcher.sh "$stage/bin/mediajobs-launcher"
if [ -n "${BASE:-}" ]; then
  ref="$(git rev-parse --verify "$BASE^{commit}")"
  echo "bundle: building mediajobs at $ref (BASE)"
  tree="$(mktemp -d)"
  git worktree add -q --detach "$tree" "$ref"
  mkdir -p "$stage/base"
  (cd "$tree/apps" && go build -trimpath -ldflags '-s -w' -o "$stage/base/" ./cmd/mediajobs) ||
    { git worktree remove --force "$tree"; exit 1; }
  git worktree remove --force "$tree"
  cp "$stage/bin/mediajobs-launcher" "$stage/base/"
  echo "$ref" >"$stage/base/REF"
fi
(cd integration && go test -c -trimpath -ldflags '-s -w' -o "$stage/bin/integration.test" .)
tools=("$ff/bin/ffmpeg" "$ff/bin/ffprobe" "$(command -v bwrap)" "$(command -v prlimit)" "$(command -v taskset)"
  "$(command -v fc-list)" "$(command -v fc-cache)")
cp "${tools[@]}" "$stage/bin/"
# The libraries beyond glibc, which every x86-64 Linux has.
ldd "${tools[@]}" | awk '/=> \//{print $3}' | sort -u | grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv)\.so' |
  xargs -I{} cp -L {} "$stage/lib/"
cp /usr/share/fonts/opentype/inter/*.otf "$stage/fonts/"
cp -a /etc/fonts "$stage/etc/"
tar -C "$stage" -cf - bin lib fonts etc $([ -d "$stage/base" ] && echo base) | xz -6 -T0 >"$root/var/bundle.tar.xz"
echo "bundle: var/bundle.tar.xz ($(du -h "$root/var/bundle.tar.xz" | cut -f1)); on the other machine: bash scripts/bundle-run.sh"
