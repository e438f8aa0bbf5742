#!/usr/bin/env bash
# Writes the expected output of each golden SQL file here (NAME.sql -> NAME.out) by
# running it through psql against PostgreSQL 15, started here on a free loopback port
# from Debian's binaries (postgresql-15) and stopped by its process id.
# usage: tests/clients/sql/regen.sh [NAME.sql ...]   (default: every *.sql here)
set -euo pipefail
cd "$(dirname "$0")"
PGBIN=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null) || { echo "needs PostgreSQL 15 (Debian: postgresql-15)" >&2; exit 1; }
W=$(mktemp -d /tmp/golden-pg.XXXX); chmod 777 "$W"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else sh -c "$*"; fi; }
as_pg "$PGBIN/initdb -D $W/pg -A trust -U postgres >/dev/null"
as_pg "$PGBIN/pg_ctl -D $W/pg -o '-p $PORT -k $W -c listen_addresses=127.0.0.1' -l $W/log -w start >/dev/null"
trap 'kill -INT "$(head -1 "$W/pg/postmaster.pid")" 2>/dev/null; sleep 1; rm -rf "$W"' EXIT
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(*.sql)
for f in "${files[@]}"; do
    LC_ALL=C.UTF-8 PGCLIENTENCODING=UTF8 psql -X -a -v ON_ERROR_STOP=0 -h 127.0.0.1 -p "$PORT" -U postgres -d postgres \
        -f "$f" >"${f%.sql}.out" 2>&1
    echo "wrote ${f%.sql}.out"
done
