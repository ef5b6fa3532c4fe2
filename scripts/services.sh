#!/usr/bin/env bash
# Starts the local services the tests use, with the settings they expect, when they are down:
#   PostgreSQL on 127.0.0.1:5432, trust auth for local TCP, user postgres, database test;
#   NATS with JetStream on 127.0.0.1:4222; Redis on 127.0.0.1:6379; the Docker Engine.
# scripts/deps.sh installs them. Idempotent: a service that answers is left as it is. A service
# that cannot be started is named; under CI=true that fails the script, since the tests would
# fail on it anyway (they do not skip there).
set -u

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_up() { # port: up to 15 s
  for _ in $(seq 1 60); do
    up "$1" && return 0
    sleep 0.25
  done
  return 1
}
failed=()

# PostgreSQL: Debian's cluster (made when missing), local TCP trusted, the test database made.
if ! up 5432; then
  if command -v pg_lsclusters >/dev/null 2>&1; then
    version="$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n1)"
    if [ -n "$version" ] && [ -z "$(pg_lsclusters -h 2>/dev/null | awk -v v="$version" '$1 == v && $2 == "main"')" ]; then
      pg_createcluster "$version" main >/dev/null
    fi
    cluster="$(pg_lsclusters -h | awk '$2 == "main" { print $1; exit }')"
    hba="/etc/postgresql/$cluster/main/pg_hba.conf"
    # The tests connect as postgres without a password, over TCP on loopback only.
    if [ -w "$hba" ] && ! grep -q '^# mediajobs: trust loopback' "$hba"; then
      sed -i '1i # mediajobs: trust loopback (scripts/services.sh; the tests connect without a password)\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
    pg_ctlcluster --skip-systemctl-redirect "$cluster" main start -- -o "-c listen_addresses=127.0.0.1 -c max_connections=300" \
      || pg_ctlcluster --skip-systemctl-redirect "$cluster" main start || true
  fi
fi
if wait_up 5432; then
  if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" 2>/dev/null | grep -q 1; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "CREATE DATABASE test" >/dev/null 2>&1 || true
  fi
  psql -h 127.0.0.1 -U postgres -d test -tAc 'SELECT 1' >/dev/null 2>&1 || failed+=("PostgreSQL (no database test for user postgres with trust auth on 127.0.0.1:5432)")
else
  failed+=("PostgreSQL on 127.0.0.1:5432")
fi

# NATS with JetStream.
if ! up 4222 && [ -x /usr/sbin/nats-server ]; then
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server || true
fi
wait_up 4222 || failed+=("NATS on 127.0.0.1:4222")

# Redis, in memory only.
if ! up 6379 && command -v redis-server >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null || true
fi
wait_up 6379 || failed+=("Redis on 127.0.0.1:6379")

# The Docker Engine: machines of this project's kind start it before any session; start Debian's
# dockerd when it is installed but down.
if command -v docker >/dev/null 2>&1 && ! docker info >/dev/null 2>&1 && command -v dockerd >/dev/null 2>&1; then
  (dockerd >/var/log/mediajobs-dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
fi
docker info >/dev/null 2>&1 || failed+=("the Docker Engine (docker info fails)")

if [ ${#failed[@]} -gt 0 ]; then
  for f in "${failed[@]}"; do echo "services: not running: $f" >&2; done
  [ "${CI:-}" = true ] && exit 1
fi
exit 0
