#!/usr/bin/env bash
# Runs, on a machine without Go or Debian's packages, what scripts/bundle.sh packed: installs
# var/bundle.tar.xz's FFmpeg, FFprobe and fonts (and bubblewrap, prlimit, taskset and fc-list
# where missing) where the sandbox looks for them, then runs the GPU worker tests and
# BenchmarkSplit (1 and 2 slots, and 8 on a machine of 8 physical cores and 9 CPUs or more)
# through the packed binaries. As root, in a copy of this checkout. BUNDLE=FILE names another
# archive (a path from the checkout's root); BENCH_COUNT=N runs the benchmark N times (1);
# SPLIT_DEBUG=DIR keeps the control plane's and the workers' logs of the benchmark's last run there;
# BENCH=REGEX runs other benchmarks of integration/ instead (`-test.bench`'s pattern), such as
# 'BenchmarkRunnerOverhead/bwrap|BenchmarkFleet' for the 1-second job and the fleet on more cores.
# An archive packed with BASE=REF (scripts/bundle.sh) holds a second mediajobs: each of the N
# rounds then runs the benchmark with this build and then with that one, on the same machine
# (with SPLIT_DEBUG, each run's logs in DIR/bin-N and DIR/base-N).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="${BUNDLE:-var/bundle.tar.xz}"
echo "== machine"
grep PRETTY_NAME /etc/os-release; uname -r; echo "$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
head -1 /proc/meminfo; ls /dev/nvidia0 2>/dev/null || echo "no NVIDIA GPU"
b="$(mktemp -d)"
# xz may be missing where Python is not.
tar -C "$b" -xJf "$bundle" 2>/dev/null ||
  python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extractall(sys.argv[2], **({"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}))' "$bundle" "$b" || exit 1
# The sandbox runs /usr/bin/ffmpeg and /usr/bin/ffprobe, and mounts only /usr of the host.
for t in ffmpeg ffprobe; do
  if [ -e "/usr/bin/$t" ] && ! cmp -s "/usr/bin/$t" "$b/bin/$t"; then
    [ -e "/usr/bin/$t.before-bundle" ] || cp -p "/usr/bin/$t" "/usr/bin/$t.before-bundle"
    echo "replacing /usr/bin/$t (the one there is kept as /usr/bin/$t.before-bundle)"
  fi
  cp "$b/bin/$t" /usr/bin/ || exit 1
done
for t in bwrap prlimit taskset fc-list fc-cache; do [ -x "/usr/bin/$t" ] || cp "$b/bin/$t" /usr/bin/; done
# A library the system has is left alone: /usr/local/lib comes first, and an older copy there
# would shadow it for every program. (grep reads the whole list: with -q it could end the pipe
# early, and pipefail would take that as a miss.)
have="$(ldconfig -p)"
for l in "$b"/lib/*; do grep "^\s*$(basename "$l") " <<<"$have" >/dev/null || cp "$l" /usr/local/lib/; done
ldconfig
[ -d /etc/fonts ] || cp -a "$b/etc/fonts" /etc/
mkdir -p /usr/share/fonts/opentype/inter && cp "$b"/fonts/* /usr/share/fonts/opentype/inter/ && fc-cache -f >/dev/null 2>&1
ffmpeg -hide_banner -version | head -1
bwrap --ro-bind / / --unshare-all --die-with-parent true && echo "bubblewrap: namespaces work" || echo "bubblewrap: FAILED (the sandbox cannot run here)"

export MEDIAJOBS_BINARY="$b/bin/mediajobs"
bench="${BENCH:-BenchmarkSplit}"
cd integration
# The GPU worker tests are the default run's; a run of BENCH is about its benchmarks alone.
[ -z "${BENCH:-}" ] && echo "== GPU worker tests" && timeout 180 "$b/bin/integration.test" -test.run 'TestNVENCOnAGPUWorker|TestGPUJobsGoToGPUWorkers' -test.v 2>&1 |
  grep -E -- '^(---|    ---|ok|FAIL|PASS)|nvenc_test|gpu_test'
if [ ! -x "$b/base/mediajobs" ]; then
  echo "== $bench"
  timeout "${BENCH_TIMEOUT:-480}" "$b/bin/integration.test" -test.run '^$' -test.bench "$bench" -test.benchtime 1x -test.count "${BENCH_COUNT:-1}" 2>&1 | grep -v '^{'
  exit
fi
# Each build's runs get an equal share of the time.
per=$(( ${BENCH_TIMEOUT:-480} / (2 * ${BENCH_COUNT:-1}) ))
for i in $(seq "${BENCH_COUNT:-1}"); do
  for build in bin base; do
    name="this build"
    [ "$build" = base ] && name="base $(cat "$b/base/REF")"
    echo "== $bench, round $i, $name"
    debug="${SPLIT_DEBUG:-}"
    [ -n "$debug" ] && debug="$debug/$build-$i" && mkdir -p "$debug"
    SPLIT_DEBUG="$debug" MEDIAJOBS_BINARY="$b/$build/mediajobs" timeout "$per" "$b/bin/integration.test" -test.run '^$' -test.bench "$bench" -test.benchtime 1x 2>&1 | grep -v '^{'
  done
done
