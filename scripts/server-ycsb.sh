#!/usr/bin/env bash
# YCSB over the PostgreSQL wire protocol (issue 4's judged figures), in one go:
#   in memory:  server --memory-limit 4GiB,   bench --skew 0.99
#   8x memory:  server --memory-limit 128MiB, bench --skew 1.0  (1 GiB of tuples)
# both with --partitions 2, 1,000,000 records, read-heavy, client on this machine, and the
# server's command log as COMMAND_LOG says (default off: these figures are the wire
# protocol's and the anti-cache's; with sync, see docs/results/durability.md). Each
# configuration gets a fresh server; with ROUNDS > 1 the two alternate. Writes
# OUT/server-<config>-<round>.json and prints a summary line per run.
# Usage: scripts/server-ycsb.sh [OUT_DIR] (env: ROUNDS=2 DURATION=20 WARMUP=5 PORT=55433)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/results}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-20}
WARMUP=${WARMUP:-5}
PORT=${PORT:-55433}
COMMAND_LOG=${COMMAND_LOG:-off}
BIN=target/release/permafrost
cargo build --release -q
mkdir -p "$OUT"
DATA=$(mktemp -d)
SERVER=""
stop() {
    [ -n "$SERVER" ] || return 0
    kill -TERM "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
    SERVER=""
}
trap 'stop; rm -rf "$DATA"' EXIT

run() {  # run NAME MEMORY SKEW ROUND
    rm -rf "$DATA/db"
    "$BIN" serve --listen "127.0.0.1:$PORT" --partitions 2 --memory-limit "$2" --command-log "$COMMAND_LOG" \
        --data-dir "$DATA/db" --metrics-listen off >"$DATA/server.log" 2>&1 &
    SERVER=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
        sleep 0.1
    done
    "$BIN" bench ycsb --target "server=127.0.0.1:$PORT" --records 1000000 --mix read-heavy \
        --skew "$3" --warmup "$WARMUP" --duration "$DURATION" --json "$OUT/server-$1-$4.json" |
        grep -E "txn/s|anti-cache" | sed "s/^/[$1 round $4] /"
    stop
}

for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        run in-memory 4GiB 0.99 "$r"; run 8x-memory 128MiB 1.0 "$r"
    else
        run 8x-memory 128MiB 1.0 "$r"; run in-memory 4GiB 0.99 "$r"
    fi
done
