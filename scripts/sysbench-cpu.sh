#!/usr/bin/env bash
# Server CPU per statement, with an unmodified client: runs one sysbench test against
# permafrost serve and PostgreSQL, each server in a cgroup v1 cpuacct group of its own, and
# prints throughput, 95th-percentile latency and the server's CPU time per statement (user
# and system, every thread and process of the server) over the measured run. Issue 23 judges
# "server CPU per point select at most half of PostgreSQL's"; ../shared/tools/
# sysbench-compare.sh gives the throughput figures with memory cgroups and MariaDB too.
# Needs root (cgroups), sysbench, PostgreSQL (Debian packages) and a release build.
# Usage: scripts/sysbench-cpu.sh [TEST] [THREADS] [SECS]
#   (defaults: oltp_point_select 4 10; env: ROWS=100000, SYSTEMS="permafrost postgres",
#    PFEXTRA: more `permafrost serve` flags, e.g. "--io-threads 1"; SKIP_TRX=off: with
#    BEGIN…COMMIT, as oltp_read_write is judged). SYSTEMS may include `floor`:
#    `permafrost bench wire-floor`, a server that answers every query with a canned row
#    from a blocking thread per connection and does no work, the ceiling of this machine
#    for any server (point selects only: its answers are not what other tests expect)
set -u
cd "$(dirname "$0")/.."
TEST=${1:-oltp_point_select}
THREADS=${2:-4}
SECS=${3:-10}
ROWS=${ROWS:-100000}
SYSTEMS=${SYSTEMS:-"permafrost postgres"}
BIN=$PWD/target/release/permafrost
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
CG=/sys/fs/cgroup/cpuacct
[ -x "$BIN" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -d "$CG" ] || { echo "needs cgroup v1 cpuacct at $CG" >&2; exit 1; }
W=$(mktemp -d /tmp/sbcpu.XXXX)
chmod 777 "$W"
cleanup() {
    pkill -f "listen 127.0.0.1:55671" 2>/dev/null
    su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1
    sleep 1
    pkill -f "wire-floor --listen 127.0.0.1:55673" 2>/dev/null
    rmdir "$CG/sbcpu-pf" "$CG/sbcpu-pg" "$CG/sbcpu-fl" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$CG/sbcpu-pf" "$CG/sbcpu-pg" "$CG/sbcpu-fl"
common="--tables=1 --table-size=$ROWS --rand-type=uniform --create_secondary=off"

run() {  # run NAME CGROUP driver-args...
    local name=$1 cg=$2
    shift 2
    sysbench oltp_point_select "$@" $common prepare >/dev/null 2>&1
    local c0 c1 out
    c0=$(cat "$CG/$cg/cpuacct.usage")
    out=$(sysbench "$TEST" "$@" $common --threads="$THREADS" --time="$SECS" --skip_trx="${SKIP_TRX:-on}" run 2>&1)
    c1=$(cat "$CG/$cg/cpuacct.usage")
    local tps n p95
    tps=$(echo "$out" | sed -n 's/.*transactions:.*(\([0-9.]*\) per sec.*/\1/p')
    n=$(echo "$out" | sed -n 's/.*transactions: *\([0-9]*\).*/\1/p')
    p95=$(echo "$out" | sed -n 's/ *95th percentile: *\([0-9.]*\)/\1/p')
    if [ -z "$n" ] || [ "$n" = 0 ]; then
        echo "$name: sysbench failed: $(echo "$out" | grep -iE 'fatal|error' | head -1)"
        return
    fi
    printf '%-10s %-22s threads=%-3s tps=%-10s p95_ms=%-6s server_cpu_us_per_stmt=%s\n' \
        "$name" "$TEST" "$THREADS" "$tps" "$p95" "$(awk -v d=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.1f", d / 1000 / n }')"
}

ready() {  # ready PORT: waits until a server answers there
    for _ in $(seq 60); do
        psql -h 127.0.0.1 -p "$1" -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && return
        sleep 0.5
    done
}

pg_args() {  # pg_args PORT: sysbench's pgsql driver options
    echo "--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$1 --pgsql-user=postgres --pgsql-db=postgres"
}

for sys in $SYSTEMS; do
    case $sys in
    permafrost)
        sh -c "echo \$\$ > $CG/sbcpu-pf/tasks; exec $BIN serve --data-dir $W/pf --listen 127.0.0.1:55671 \
            --metrics-listen off ${PFEXTRA:-}" >"$W/pf.log" 2>&1 &
        ready 55671
        run permafrost sbcpu-pf $(pg_args 55671)
        pkill -f "listen 127.0.0.1:55671"
        sleep 1
        ;;
    floor)
        sh -c "echo \$\$ > $CG/sbcpu-fl/tasks; exec $BIN bench wire-floor --listen 127.0.0.1:55673" >"$W/fl.log" 2>&1 &
        ready 55673
        run floor sbcpu-fl $(pg_args 55673)
        pkill -f "wire-floor --listen 127.0.0.1:55673"
        sleep 1
        ;;
    postgres)
        su postgres -c "$PGBIN/initdb -D $W/pg -A trust -U postgres" >/dev/null 2>&1
        sh -c "echo \$\$ > $CG/sbcpu-pg/tasks; exec su postgres -c \"$PGBIN/postgres -D $W/pg -p 55672 -k $W \
            -c listen_addresses=127.0.0.1 -c shared_buffers=1024MB -c max_connections=300\"" >"$W/pg.log" 2>&1 &
        ready 55672
        run postgres sbcpu-pg $(pg_args 55672)
        su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1
        ;;
    esac
done
