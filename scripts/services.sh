#!/usr/bin/env bash
# Starts the local services the scale-out adapters are tested against, when they are installed
# but down. Tests skip an adapter whose service is absent, so this never fails the build.
set -u

up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! up 5432 && ls /etc/postgresql >/dev/null 2>&1; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! up 4222 && [ -x /usr/sbin/nats-server ]; then
  mkdir -p /var/lib/nats-server
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server || true
fi
if ! up 6379 && command -v redis-server >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
fi
for _ in $(seq 1 20); do
  up 5432 && break
  sleep 0.5
done
exit 0
