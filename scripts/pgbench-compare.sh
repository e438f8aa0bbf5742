#!/usr/bin/env bash
# pgbench side by side: Permafrost and PostgreSQL, each initialized by `pgbench -i` as a
# new user would (the same scale), then pgbench's built-in scripts run against each in
# turn with the same clients and duration. Durable commits on both: Permafrost with its
# defaults (command log sync), PostgreSQL with synchronous_commit=on. Prints one line per
# (system, script, clients): transactions per second, failed and retried transactions,
# and whether the four TPC-B sums still agree afterwards.
#
# usage: scripts/pgbench-compare.sh BIN SCALE "CLIENTS" SECS ["SCRIPTS"] ["SYSTEMS"]
#   SCRIPTS: any of tpcb-like simple-update select-only (default: tpcb-like select-only)
#   SYSTEMS: any of permafrost postgres (default: both)
#   env: MODE (pgbench's --protocol: simple, extended or prepared; default simple),
#        MAX_TRIES (pgbench --max-tries, retrying serialization failures; default 20)
# Needs pgbench and psql, and the PostgreSQL server for "postgres" (Debian: postgresql).
set -u
BIN=$1; SCALE=$2; CLIENTS=$3; SECS=$4
SCRIPTS=${5:-"tpcb-like select-only"}; SYSTEMS=${6:-"permafrost postgres"}
MODE=${MODE:-simple}; MAX_TRIES=${MAX_TRIES:-20}
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
W=$(mktemp -d /tmp/pgbcmp.XXXX); chmod 777 "$W"
PF_PID=""
cleanup() {
    [ -n "$PF_PID" ] && kill "$PF_PID" 2>/dev/null
    [ -d "$W/pg" ] && su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1
    sleep 1; rm -rf "$W"
}
trap cleanup EXIT

wait_up() {  # port
    for _ in $(seq 60); do
        psql -X -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "the server on port $1 did not start" >&2; return 1
}

sums() {  # port: "a t b d" (the TPC-B invariant: all four equal)
    for q in "sum(abalance) FROM pgbench_accounts" "sum(tbalance) FROM pgbench_tellers" \
        "sum(bbalance) FROM pgbench_branches" "sum(delta) FROM pgbench_history"; do
        psql -X -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atc "SELECT coalesce($q, 0)" 2>/dev/null || echo "?"
    done | tr '\n' ' '
}

run() {  # system port
    local sys=$1 port=$2 out
    out=$(pgbench -h 127.0.0.1 -p "$port" -U postgres -i -s "$SCALE" postgres 2>&1) ||
        { echo "$sys: pgbench -i failed: $(echo "$out" | tail -2 | tr '\n' ' ')"; return; }
    for script in $SCRIPTS; do
        for c in $CLIENTS; do
            local j=$(( c < 2 ? c : 2 ))
            out=$(pgbench -h 127.0.0.1 -p "$port" -U postgres -n -b "$script" -M "$MODE" -c "$c" -j "$j" \
                -T "$SECS" --max-tries "$MAX_TRIES" postgres 2>&1)
            local tps failed retried ok
            tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
            failed=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
            retried=$(echo "$out" | sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p')
            [ -n "$tps" ] || tps="FAILED:$(echo "$out" | grep -iE 'error|fatal' | head -1)"
            read -r a t b d <<<"$(sums "$port")"
            if [ "$a" = "$t" ] && [ "$t" = "$b" ] && [ "$b" = "$d" ]; then ok=yes; else ok="NO($a $t $b $d)"; fi
            printf '%-10s %-13s clients=%-3s tps=%-10s failed=%-6s retried=%-6s sums_agree=%s\n' \
                "$sys" "$script" "$c" "$tps" "${failed:-?}" "${retried:-?}" "$ok"
        done
    done
}

echo "pgbench $(pgbench --version | awk '{print $3}'), scale $SCALE, $SECS s per run, protocol $MODE, max tries $MAX_TRIES"
for sys in $SYSTEMS; do
    case $sys in
    permafrost)
        "$BIN" serve --data-dir "$W/pf" --listen 127.0.0.1:55611 --metrics-listen off >"$W/pf.log" 2>&1 &
        PF_PID=$!
        wait_up 55611 && run permafrost 55611
        kill "$PF_PID"; wait "$PF_PID" 2>/dev/null; PF_PID="";;
    postgres)
        [ -n "$PGBIN" ] || { echo "postgres: no PostgreSQL server installed (Debian: postgresql)"; continue; }
        su postgres -c "$PGBIN/initdb -D $W/pg -A trust -U postgres" >/dev/null 2>&1
        su postgres -c "$PGBIN/pg_ctl -D $W/pg -l $W/pg.log -w start -o '-p 55612 -k $W -c listen_addresses=127.0.0.1 -c synchronous_commit=on -c max_connections=300'" >/dev/null 2>&1
        wait_up 55612 && run postgres 55612
        su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1;;
    *) echo "unknown system $sys";;
    esac
done
