#!/usr/bin/env bash
# Runs the real-client tests (psql, psycopg 3, asyncpg, pgx, node-postgres, SQLAlchemy 2, psycopg2, Alembic, Django,
# pgjdbc, pgbench, sysbench) against ONE `permafrost serve`.
# Needs target/debug/permafrost (built here if missing), psql, python3 with psycopg, asyncpg, psycopg2, SQLAlchemy, Alembic
# and Django, Go (pgx comes from the module proxy as go.sum pins it), node with node/node_modules (`npm ci` there),
# pgbench, sysbench, javac/java and the pgjdbc jar ($PGJDBC_JAR, default target/clients/postgresql-42.7.4.jar,
# which .ci/run fetches). Installs nothing. Prints `clients: N passed, M failed`.
set -uo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../.. && pwd)
BIN=$ROOT/target/debug/permafrost
PGJDBC_JAR=${PGJDBC_JAR:-$ROOT/target/clients/postgresql-42.7.4.jar}

if [ ! -x "$BIN" ]; then
    (cd "$ROOT" && cargo build -p permafrost-cli) || { echo "clients: 0 passed, 1 failed (build)"; exit 1; }
fi

WORK=$(mktemp -d)
SERVER_PID=""
stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}
trap 'stop_server; rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

alive() {  # the server process exists and is no zombie
    [ -n "$SERVER_PID" ] && [ -r "/proc/$SERVER_PID/stat" ] && ! grep -q ') Z ' "/proc/$SERVER_PID/stat"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Start the server; a port taken in between picking and binding: try another (3 tries).
PORT=""
for _ in 1 2 3; do
    port=$(free_port)
    rm -rf "$WORK/data"
    "$BIN" serve --listen "127.0.0.1:$port" --data-dir "$WORK/data" --memory-limit 256MiB \
        --partitions 2 --metrics-listen off >"$WORK/server.log" 2>&1 </dev/null &
    SERVER_PID=$!
    for _ in $(seq 300); do  # 30 s
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then PORT=$port; break 2; fi
        alive || break
        sleep 0.1
    done
    stop_server
done
if [ -z "$PORT" ]; then
    echo "permafrost serve did not start; its log:"
    cat "$WORK/server.log"
    echo "clients: 0 passed, 1 failed"
    exit 1
fi
echo "permafrost serve on 127.0.0.1:$PORT (pid $SERVER_PID)"

passed=0
failed=0
result() {  # result NAME STATUS
    if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "== $1: ok"
    else failed=$((failed + 1)); echo "== $1: FAILED (exit $2)"; fi
}

echo "== psql: psql_session.sql, output compared with psql_session.out"
LC_ALL=C.UTF-8 PGCLIENTENCODING=UTF8 PGUSER=permafrost PGDATABASE=permafrost PGCONNECT_TIMEOUT=10 \
    timeout 120 psql -X -a -v ON_ERROR_STOP=0 -h 127.0.0.1 -p "$PORT" -f psql_session.sql \
    >"$WORK/psql.out" 2>&1
status=$?
if [ "$status" = 0 ]; then
    diff -u psql_session.out "$WORK/psql.out"
    status=$?
else
    cat "$WORK/psql.out"
fi
result psql "$status"

# Golden SQL files: each one's expected output is PostgreSQL 15's own (sql/regen.sh).
for sql in sql/*.sql; do
    name=$(basename "$sql" .sql)
    echo "== golden SQL: $sql, output compared with PostgreSQL 15's (sql/$name.out)"
    (cd sql && LC_ALL=C.UTF-8 PGCLIENTENCODING=UTF8 PGUSER=permafrost PGDATABASE=permafrost PGCONNECT_TIMEOUT=10 \
        timeout 120 psql -X -a -v ON_ERROR_STOP=0 -h 127.0.0.1 -p "$PORT" -f "$name.sql") >"$WORK/$name.out" 2>&1
    status=$?
    if [ "$status" = 0 ]; then
        diff -u "sql/$name.out" "$WORK/$name.out"
        status=$?
    else
        cat "$WORK/$name.out"
    fi
    result "golden $name" "$status"
done

echo "== psycopg: psycopg_test.py"
timeout 300 python3 psycopg_test.py "$PORT"
result psycopg $?

echo "== asyncpg: asyncpg_test.py (binary arrays, jsonb, uuid, timestamptz)"
timeout 300 python3 asyncpg_test.py "$PORT"
result asyncpg $?

echo "== pgx: pgx/main.go (Go, pgx v5: binary and text formats, = ANY, a batch, transactions, CopyFrom)"
if command -v go >/dev/null 2>&1; then
    (cd pgx && timeout 300 go build -o "$WORK/pgxcheck" .) && timeout 300 "$WORK/pgxcheck" "$PORT"
    result pgx $?
else
    echo "go is missing (https://go.dev/dl; go.mod names the version)"
    result pgx 1
fi

echo "== node-postgres: node/test.js (pg 8: values, = ANY, a named statement, transactions, a Pool)"
if [ -d node/node_modules/pg ]; then
    timeout 300 node node/test.js "$PORT"
    result node-postgres $?
else
    echo "missing tests/clients/node/node_modules: npm ci --prefix tests/clients/node"
    result node-postgres 1
fi

echo "== sqlalchemy: sqlalchemy_test.py (SQLAlchemy 2 over psycopg 3 and psycopg2; psycopg2)"
timeout 300 python3 sqlalchemy_test.py "$PORT"
result sqlalchemy $?

echo "== alembic: alembic_test.py (migrations in one transaction block: upgrade, downgrade, upgrade)"
timeout 300 python3 alembic_test.py "$PORT"
result alembic $?

echo "== django: django_test.py (a new project of two apps: makemigrations, migrate, the ORM, the admin)"
timeout 300 python3 django_test.py "$PORT"
result django $?

echo "== jdbc: jdbc/Main.java with $(basename "$PGJDBC_JAR")"
if [ ! -f "$PGJDBC_JAR" ]; then
    echo "missing $PGJDBC_JAR: mvn dependency:copy -Dartifact=org.postgresql:postgresql:42.7.4" \
        "-DoutputDirectory=$ROOT/target/clients (or set PGJDBC_JAR)"
    result jdbc 1
else
    timeout 120 javac -d "$WORK/jdbc" -cp "$PGJDBC_JAR" jdbc/Main.java &&
        timeout 300 java -cp "$PGJDBC_JAR:$WORK/jdbc" Main "$PORT"
    result jdbc $?
fi

echo "== pgbench: pgbench -i, then its TPC-B script from 4 clients; the four sums agree"
pgbench_test() {
    local conn=(-h 127.0.0.1 -p "$PORT" -U permafrost)
    pgbench --version >/dev/null 2>&1 || { echo "pgbench is missing (Debian: postgresql)"; return 1; }
    timeout 120 pgbench "${conn[@]}" -i -s 1 permafrost || return 1
    timeout 300 pgbench "${conn[@]}" -n -c 4 -j 2 -t 100 --max-tries 20 permafrost >"$WORK/pgbench.out" 2>&1
    local status=$?
    cat "$WORK/pgbench.out"
    [ "$status" = 0 ] || return 1
    local processed failed sums
    processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$WORK/pgbench.out")
    failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$WORK/pgbench.out")
    [ "$processed" = 400 ] && [ "$failed" = 0 ] || { echo "pgbench: $processed processed, $failed failed"; return 1; }
    sums=$(for q in "sum(abalance) FROM pgbench_accounts" "sum(tbalance) FROM pgbench_tellers" \
        "sum(bbalance) FROM pgbench_branches" "sum(delta) FROM pgbench_history" "count(*) FROM pgbench_history" \
        "count(*) FROM pgbench_accounts"; do
        PGCONNECT_TIMEOUT=10 psql -X -At "${conn[@]}" -d permafrost -c "SELECT $q" || echo error
    done | tr '\n' ' ')
    echo "sums of abalance, tbalance, bbalance, delta; history rows; accounts: $sums"
    read -r a t b d h n <<<"$sums"
    [ "$a" = "$t" ] && [ "$t" = "$b" ] && [ "$b" = "$d" ] && [ "$h" = 400 ] && [ "$n" = 100000 ]
}
pgbench_test
result pgbench $?

echo "== sysbench: oltp_read_write with BEGIN/COMMIT from 4 threads; every row is still there"
sysbench_test() {
    command -v sysbench >/dev/null 2>&1 || { echo "sysbench is missing (Debian: sysbench)"; return 1; }
    local rows=2000
    # --auto_inc=off: sysbench numbers the rows 1 to $rows itself. With SERIAL ids it would
    # draw from this server's per-partition sequences, which are unique but not dense
    # (README, "Sequences"), and its blocks, which delete and insert random ids up to
    # $rows, would then add rows.
    local args=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PORT" --pgsql-user=permafrost
        --pgsql-db=permafrost --tables=1 --table-size=$rows --auto_inc=off)
    timeout 120 sysbench oltp_read_write "${args[@]}" prepare >"$WORK/sysbench.prep" 2>&1 ||
        { cat "$WORK/sysbench.prep"; return 1; }
    # Its blocks delete a row and insert it again, so the table keeps its ids; a block
    # that fails with 40001 at COMMIT is retried by sysbench (an "ignored error").
    timeout 120 sysbench oltp_read_write "${args[@]}" --threads=4 --time=5 --skip_trx=off run \
        >"$WORK/sysbench.out" 2>&1
    local status=$?
    grep -E "transactions:|queries:|ignored errors:|reconnects:|FATAL|error" "$WORK/sysbench.out"
    [ "$status" = 0 ] || { tail -n 20 "$WORK/sysbench.out"; return 1; }
    local done
    done=$(sed -n 's/^ *transactions: *\([0-9]*\).*/\1/p' "$WORK/sysbench.out")
    [ -n "$done" ] && [ "$done" -gt 0 ] || { echo "sysbench: no transaction completed"; return 1; }
    local ids
    ids=$(PGCONNECT_TIMEOUT=10 psql -X -At -h 127.0.0.1 -p "$PORT" -U permafrost -d permafrost \
        -c "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM sbtest1" | tr '|' ' ')
    echo "rows, distinct ids, lowest, highest: $ids"
    [ "$ids" = "$rows $rows 1 $rows" ] || return 1
    timeout 60 sysbench oltp_read_write "${args[@]}" cleanup >/dev/null 2>&1
}
sysbench_test
result sysbench $?

if ! alive || ! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    echo "the server died or stopped accepting connections during the tests"
    failed=$((failed + 1))
fi
if [ "$failed" != 0 ]; then
    echo "== server log (last 200 lines)"
    tail -n 200 "$WORK/server.log"
fi
stop_server
echo "clients: $passed passed, $failed failed"
[ "$failed" = 0 ]
