#!/bin/sh
# Makes the cluster on the first start (as the official image does, from POSTGRES_* variables),
# then runs the server in the foreground, listening on every address of the container.
set -eu
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
auth="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ "$auth" != trust ] && [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "entrypoint: set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust" >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host="$auth" -E UTF8 --locale=C.UTF-8 >/dev/null
  else
    initdb -D "$PGDATA" -U "$user" --auth-local=trust --auth-host="$auth" -E UTF8 --locale=C.UTF-8 >/dev/null
  fi
  rm -f "$pwfile"
  printf 'host all all 0.0.0.0/0 %s\nhost all all ::/0 %s\n' "$auth" "$auth" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 -U "$user" -d postgres -qc "CREATE DATABASE \"$db\""
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c max_connections="${POSTGRES_MAX_CONNECTIONS:-200}" "$@"
