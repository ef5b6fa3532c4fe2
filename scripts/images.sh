#!/usr/bin/env bash
# Builds every image the deployment and the tests use, pulling none (this project's machines reach
# no container registry):
#   debian:bookworm-slim        the base every Dockerfile names, made here from Debian's packages
#                               (debootstrap --variant=minbase, then docker import) when the engine
#                               does not already hold it; a machine that pulled it keeps its own
#   mediajobs:local             deploy/Dockerfile: the binary (make build), FFmpeg, bubblewrap, fonts, the speech model
#   mediajobs/ffmpeg:bookworm   adapters/dockersandbox/Dockerfile: the Docker sandbox's FFmpeg and
#                               its warm containers' launcher
#   mediajobs/postgres:15       deploy/images/postgres
#   mediajobs/nats:2.9          deploy/images/nats
#   mediajobs/redis:7           deploy/images/redis
#   mediajobs/versitygw:1.8.0   deploy/images/s3, around the versitygw that scripts/deps.sh builds
#   mediajobs/caddy:2.6         deploy/images/caddy, the load balancer
# Idempotent and cached by content: the base is made once; the rest are `docker build`s whose
# layers the engine's cache keys by the Dockerfile and the files they copy, so a second run with
# nothing changed takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

base=debian:bookworm-slim
suite=bookworm
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

if ! docker info >/dev/null 2>&1; then
  echo "images: no Docker Engine answers (docker info failed); scripts/services.sh starts Debian's dockerd" >&2
  exit 1
fi

if ! docker image inspect "$base" >/dev/null 2>&1; then
  echo "images: making $base with debootstrap from $mirror (once; about a minute)"
  root="$(mktemp -d /var/tmp/mediajobs-base.XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >/tmp/mediajobs-debootstrap.log 2>&1 || {
    echo "images: debootstrap failed; see /tmp/mediajobs-debootstrap.log" >&2
    tail -n 20 /tmp/mediajobs-debootstrap.log >&2
    exit 1
  }
  # As Debian's own container images: the updates and security suites, no recommends, no
  # documentation, no package lists or downloaded packages left in the layer.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: $suite $suite-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: $suite-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/90mediajobs"
  printf 'path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\npath-exclude /usr/share/locale/*\n' \
    >"$root/etc/dpkg/dpkg.cfg.d/90mediajobs"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log "$root"/tmp/*
  tar --numeric-owner -C "$root" -c . |
    docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'LABEL io.mediajobs.base=debootstrap' - "$base" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi

# The S3 image carries the versitygw that scripts/deps.sh built.
gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH | cut -d: -f1)/bin"
if [ ! -x "$gobin/versitygw" ]; then
  echo "images: $gobin/versitygw is missing; run scripts/deps.sh" >&2
  exit 1
fi
if ! cmp -s "$gobin/versitygw" deploy/images/s3/versitygw; then
  cp "$gobin/versitygw" deploy/images/s3/versitygw
fi
# The FFmpeg image carries the warm containers' launcher, built static for it.
bash scripts/launcher.sh adapters/dockersandbox/mediajobs-launcher
for f in bin/mediajobs validator/cmd/wasm/validator.wasm; do
  if [ ! -f "$f" ]; then
    echo "images: $f is missing; make images builds it first (make build)" >&2
    exit 1
  fi
done

build() { # tag, context, Dockerfile
  local t0 ms
  t0=$(date +%s%N)
  if ! docker build -q --pull=false -t "$1" -f "$3" "$2" >/tmp/mediajobs-image.log 2>&1; then
    echo "images: building $1 failed:" >&2
    tail -n 30 /tmp/mediajobs-image.log >&2
    exit 1
  fi
  ms=$((($(date +%s%N) - t0) / 1000000))
  printf 'images: %-28s %4d.%01ds\n' "$1" $((ms / 1000)) $((ms % 1000 / 100))
}
build mediajobs/ffmpeg:bookworm adapters/dockersandbox adapters/dockersandbox/Dockerfile
build mediajobs:local . deploy/Dockerfile
build mediajobs/postgres:15 deploy/images/postgres deploy/images/postgres/Dockerfile
build mediajobs/nats:2.9 deploy/images/nats deploy/images/nats/Dockerfile
build mediajobs/redis:7 deploy/images/redis deploy/images/redis/Dockerfile
build mediajobs/versitygw:1.8.0 deploy/images/s3 deploy/images/s3/Dockerfile
build mediajobs/caddy:2.6 deploy/images/caddy deploy/images/caddy/Dockerfile
