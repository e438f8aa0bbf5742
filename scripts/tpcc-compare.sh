#!/usr/bin/env bash
# TPC-C from a client nobody here wrote: Percona's sysbench-tpcc (https://github.com/Percona-Lab/sysbench-tpcc,
# its own schema DDL with foreign keys, loader, the five transactions and its consistency checks), run unchanged
# against Permafrost (pgsql driver), PostgreSQL 15 (pgsql) and MariaDB (mysql), each in its own memory cgroup of
# the same size, durable commits. Per system: prepare, run, check; prints transactions/s, the share of
# transactions retried (sysbench's "ignored errors": 40001 / 40P01 / deadlocks, and New-Order's 1 % rollback),
# the consistency checks passed, and the peak memory.
# usage: tpcc-compare.sh BIN SYSBENCH_TPCC_DIR BUDGET_MIB THREADS SECS [SYSTEMS] [WAREHOUSES]
#   SYSBENCH_TPCC_DIR: a checkout of sysbench-tpcc (tpcc.lua and its three companions).
#   SYSTEMS: any of "permafrost postgres mariadb" (default all, in that order); WAREHOUSES: default 2.
#   Each server's cgroup is its budget + 128 MiB for the run and the checks (budget + 512 MiB while the client's
#   loader runs: its INSERTs of thousands of rows got PostgreSQL's backend and MariaDB killed by a 192 MiB cgroup;
#   each server is then stopped and started again in the run's limit, and peak_mem is the run's); Permafrost runs with its defaults (command log sync) and
#   --memory-limit BUDGET; PostgreSQL shared_buffers=BUDGET, synchronous_commit=on; MariaDB
#   innodb_buffer_pool_size=BUDGET, O_DIRECT, flush_log_at_trx_commit=1 (its Aria and MyISAM caches, which hold none of
#   these InnoDB tables, at 8 MiB instead of their 128 MiB defaults).
# CLIENT=bench: the client is `BIN bench tpcc` instead (Permafrost's own TPC-C: the specification's schema without
#   foreign keys, its full mix with last-name lookups and the 1 % rollback, 11 consistency conditions; pass "-" as
#   SYSBENCH_TPCC_DIR). It drives Permafrost and PostgreSQL over the PostgreSQL protocol and MariaDB through its
#   own driver, every workload (TPC-C, Voter, TATP). Each
#   system's JSON report is left in BENCH_OUT (default /tmp/tpcc-bench). MODES (default "interactive"): the ways
#   it runs the transactions, one run each after one load, in that order: interactive (BEGIN, a statement per round
#   trip, COMMIT) and procedures (one call per transaction: Permafrost's built-in procedures by CALL, PostgreSQL's
#   PL/pgSQL functions by SELECT, MariaDB's procedures by CALL); reports BENCH_OUT/SYSTEM-MODE.json. WORKLOAD=voter (with CLIENT=bench): Voter
#   instead of TPC-C (`BIN bench voter`, H-Store's settings, its invariants checked; WAREHOUSES ignored; BENCH_OUT
#   default /tmp/voter-bench); WORKLOAD=tatp: TATP (`BIN bench tatp`, SUBSCRIBERS default 100000). TRIALS=N (with
#   CLIENT=bench, N > 1): every system is loaded and left running in its cgroup, then N rounds run each system's
#   MODES in turn (BENCH_OUT/SYSTEM-MODE-rROUND.json), and Permafrost's figure is divided by the better peer's in
#   each round (each mode against each mode), with the spread.
set -u
need=""; command -v sysbench >/dev/null || need="$need sysbench"; command -v mariadbd >/dev/null || need="$need mariadb-server"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need="$need postgresql"; command -v psql >/dev/null || need="$need postgresql-client"
if [ -n "$need" ]; then apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null 2>&1; fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); export PATH="$PGBIN:$PATH"
CLIENT=${CLIENT:-sysbench}; WORKLOAD=${WORKLOAD:-tpcc}; TRIALS=${TRIALS:-1}; BENCH_OUT=${BENCH_OUT:-/tmp/$WORKLOAD-bench}; MODES=${MODES:-interactive}
case $WORKLOAD in tpcc) SCALE_OPT="--warehouses ${7:-2}";; voter) SCALE_OPT="";; tatp) SCALE_OPT="--subscribers ${SUBSCRIBERS:-100000}";;
  *) echo "WORKLOAD must be tpcc, voter or tatp"; exit 2;; esac
BIN=$(realpath "$1"); B=$3; T=$4; SECS=$5; SYSTEMS=${6:-"permafrost postgres mariadb"}; WH=${7:-2}
case $CLIENT in
sysbench) TPCC=$(cd "$2" && pwd); [ -f "$TPCC/tpcc.lua" ] || { echo "no tpcc.lua in $TPCC"; exit 2; };;
bench) mkdir -p "$BENCH_OUT";;
*) echo "CLIENT must be sysbench or bench"; exit 2;;
esac
W=$(mktemp -d /tmp/tpcccmp.XXXX); chmod 777 "$W"
LIMIT=$(( (B + 128) * 1024 * 1024 )); LOAD_LIMIT=$(( (B + 512) * 1024 * 1024 ))
cg() { local d=/sys/fs/cgroup/memory/tpcccmp-$1; rmdir $d 2>/dev/null; mkdir -p $d; echo $LOAD_LIMIT > $d/memory.limit_in_bytes; echo 0 > $d/memory.swappiness 2>/dev/null; echo $d; }
# Lowers system $1's cgroup to the run's limit (the kernel reclaims its page cache first) and starts its peak anew.
to_run_limit() { local d=/sys/fs/cgroup/memory/tpcccmp-$1 i
  sync  # (dirty pages are not reclaimed until written)
  for i in $(seq 10); do echo $LIMIT > $d/memory.limit_in_bytes 2>/dev/null && { echo 0 > $d/memory.max_usage_in_bytes; return 0; }; sleep 1; done
  echo "$1: its memory in use after the load ($(( $(cat $d/memory.usage_in_bytes) / 1048576 )) MiB:" \
    "$(awk '$1 ~ /^(rss|cache|shmem|mapped_file|dirty)$/ { printf "%s %d MiB ", $1, $2 / 1048576 }' $d/memory.stat)) does not fit the run's limit"; return 1; }
peak() { cat /sys/fs/cgroup/memory/tpcccmp-$1/memory.max_usage_in_bytes; }
oom_kills() { awk '/^oom_kill /{print $2}' /sys/fs/cgroup/memory/tpcccmp-$1/memory.oom_control 2>/dev/null || echo "?"; }
# The tail of a system's server log, when it failed (its log is in $W, removed at exit).
server_log() { local f; case $1 in permafrost) f=$W/pf.log;; postgres) f=$W/pg.log;; mariadb) f=$W/my/err.log;; esac
  [ -f "$f" ] && tail -n 5 "$f" | sed "s/^/$1 log: /"; }
PIDS=(); declare -A PID_OF
cleanup() { for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; sleep 2; su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1; rm -rf "$W"; for s in $SYSTEMS; do rmdir /sys/fs/cgroup/memory/tpcccmp-$s 2>/dev/null; done; }
trap cleanup EXIT
run_tpcc() {  # system driver-args
  local sys=$1; shift
  local o="--tables=1 --scale=$WH"
  (cd "$TPCC" && sysbench ./tpcc.lua "$@" $o --threads=$WH prepare) >"$W/$sys.prep" 2>&1 || { echo "$sys: prepare failed: $(grep -iE 'fatal|error' $W/$sys.prep | head -2 | tr '\n' ' ') (processes the cgroup's OOM killer killed: $(oom_kills $sys), peak_mem=$(( $(peak $sys) / 1048576 ))MiB)"; server_log $sys; return; }
  # The run starts from a server started anew in the run's limit (what the loader's
  # connections left in its memory goes with the old one).
  stop $sys; to_run_limit $sys || return; start $sys
  out=$(cd "$TPCC" && sysbench ./tpcc.lua "$@" $o --threads=$T --time=$SECS --report-interval=0 run 2>&1)
  tps=$(echo "$out" | sed -n 's/.*transactions: *\([0-9]*\) *(\([0-9.]*\) per sec.*/\2/p'); n=$(echo "$out" | sed -n 's/.*transactions: *\([0-9]*\) .*/\1/p')
  e=$(echo "$out" | sed -n 's/.*ignored errors: *\([0-9]*\) .*/\1/p')
  [ -n "$tps" ] || tps="FAILED:$(echo "$out" | grep -iE 'fatal|error' | head -1)"
  retried=$(awk -v e="${e:-0}" -v n="${n:-0}" 'BEGIN { if (n + e > 0) printf "%.2f", 100 * e / (n + e); else print "-" }')
  chk=$(cd "$TPCC" && sysbench ./tpcc.lua "$@" $o --threads=$WH check 2>&1)
  # sysbench-tpcc checks 10 conditions per warehouse; a check that errors stops the rest.
  # Its threads (one per warehouse) print at once, so two results may share a line: count
  # results, not lines (Lua's print writes a result and its newline apart; counting lines said
  # 18 or 19 of 20 in runs where no check printed FAILED).
  passed=$(echo "$chk" | grep -o PASSED | wc -l)
  printf '%-10s warehouses=%s threads=%-3s tps=%-9s retried=%s%% checks_passed=%s/%s peak_mem=%sMiB oom_kills=%s\n' "$sys" "$WH" "$T" "$tps" "$retried" \
    "$passed" $(( 10 * WH )) $(( $(peak $sys) / 1048576 )) "$(oom_kills $sys)"
  case $tps in FAILED*) server_log $sys;; esac
  echo "$chk" | grep -m1 -iE 'fatal|error|lost|closed' | sed "s/^/$sys: check stopped: /" || true
  echo "$chk" | grep -oE 'Check [0-9]+, warehouse: [0-9]+(, table [0-9]+)? FAILED' | sed "s/^/$sys: /" || true
  case $passed in $(( 10 * WH ))) ;; *) server_log $sys;; esac
}
# Starts system $1's server in its cgroup (its data directory created the first time).
# BIN bench WORKLOAD's target for system $1.
bench_target() { case $1 in permafrost) echo server=127.0.0.1:55621;; postgres) echo server=127.0.0.1:55622;;
  mariadb) echo "mariadb=mysql://root@localhost/sbtest?socket=$W/my/sock";; esac; }
bench_opts() { echo "--target $(bench_target $1) --user postgres --dbname postgres $SCALE_OPT --clients $T --quiet"; }
# BIN bench WORKLOAD loads system $1 (and checks); its server is then started again in the run's limit.
bench_load() {
  local sys=$1
  "$BIN" bench $WORKLOAD $(bench_opts $sys) --load-only >"$W/$sys.load" 2>&1 || { echo "$sys: load failed: $(tail -3 $W/$sys.load | tr '\n' ' ') (OOM kills: $(oom_kills $sys))"; server_log $sys; return 1; }
  stop $sys; to_run_limit $sys || return 1; start $sys
}
# Runs each of MODES on system $1 (round $2 of TRIALS: BENCH_OUT/SYSTEM-MODE[-rROUND].json) and prints a line each.
bench_run() {
  local sys=$1 round=$2 m f
  for m in $MODES; do
  f="$BENCH_OUT/$sys-$m.json"; [ "$TRIALS" = 1 ] || f="$BENCH_OUT/$sys-$m-r$round.json"
  "$BIN" bench $WORKLOAD $(bench_opts $sys) --no-load --mode $m --warmup 10 --duration "$SECS" --json "$f" >"$W/$sys.run" 2>&1
  python3 - "$f" "$sys" "$WH" "$T" "$(( $(peak $sys) / 1048576 ))" "$(oom_kills $sys)" "$m" "$round" <<'PY' || { echo "$sys: $m run failed: $(tail -3 $W/$sys.run | tr '\n' ' ')"; server_log $sys; }
import json, sys
r = json.load(open(sys.argv[1]))
scale = f"warehouses={sys.argv[3]} " if 'warehouses' in r else ""
tpmc = f"tpmC-equivalent={r['tpmc_equivalent']:.0f} retried={r['retried_percent']:.2f}% " if 'tpmc_equivalent' in r else f"retries={r['retries']} "
print(f"round={sys.argv[8]} {sys.argv[2]:<10} {sys.argv[7]:<11} {scale}threads={sys.argv[4]:<3} tps={r['transactions_per_sec']:<9.1f} "
      f"{tpmc}failed={r['failed']} "
      f"checks_passed={r['checks_passed']}/{len(r['checks'])} peak_mem={sys.argv[5]}MiB oom_kills={sys.argv[6]}")
for e in r['errors']: print(f"{sys.argv[2]}: {e}")
PY
  done
}
# After interleaved rounds: per mode, Permafrost's figure against the better peer's in each round, and their spread.
bench_ratios() {
  python3 - "$BENCH_OUT" "$TRIALS" "$SYSTEMS" "$MODES" <<'PY'
import json, os, sys
out, trials, systems, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
def tps(s, m, r):
    f = os.path.join(out, f"{s}-{m}-r{r}.json")
    return json.load(open(f))["transactions_per_sec"] if os.path.exists(f) else None
peers = [s for s in systems if s != "permafrost"]
for m in modes:
    for against in modes:
        ratios = []
        for r in range(1, trials + 1):
            mine, best = tps("permafrost", m, r), max((t for t in (tps(p, against, r) for p in peers) if t), default=None)
            if mine and best: ratios.append(mine / best)
        if ratios:
            print(f"permafrost {m} / better peer {against}: " + " ".join(f"{x:.2f}" for x in ratios)
                  + f"  (min {min(ratios):.2f}, max {max(ratios):.2f})")
PY
}
run_bench() {  # system: load, then one round
  bench_load $1 && bench_run $1 1
}
start() {
  local d=/sys/fs/cgroup/memory/tpcccmp-$1
  case $1 in
  permafrost)
    sh -c "echo \$\$ > $d/tasks; exec $BIN serve --data-dir $W/pf --listen 127.0.0.1:55621 --metrics-listen off --memory-limit ${B}MiB" >>"$W/pf.log" 2>&1 & PIDS+=($!); PID_OF[$1]=$!
    for i in $(seq 600); do psql -h 127.0.0.1 -p 55621 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done;;
  postgres)
    [ -d "$W/pg" ] || su postgres -c "$PGBIN/initdb -D $W/pg -A trust -U postgres" >/dev/null 2>&1
    sh -c "echo \$\$ > $d/tasks; exec su postgres -c \"$PGBIN/postgres -D $W/pg -p 55622 -k $W -c listen_addresses=127.0.0.1 -c shared_buffers=${B}MB -c synchronous_commit=on -c max_connections=300\"" >>"$W/pg.log" 2>&1 & PIDS+=($!); PID_OF[$1]=$!
    for i in $(seq 600); do psql -h 127.0.0.1 -p 55622 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done;;
  mariadb)
    [ -d "$W/my" ] || { mkdir -p $W/my; mariadb-install-db --user=root --datadir=$W/my/data --auth-root-authentication-method=normal >/dev/null 2>&1; }
    sh -c "echo \$\$ > $d/tasks; exec mariadbd --user=root --datadir=$W/my/data --socket=$W/my/sock --pid-file=$W/my/pid --skip-networking --innodb-buffer-pool-size=${B}M --innodb-flush-method=O_DIRECT --innodb-flush-log-at-trx-commit=1 --innodb-log-file-size=256M --aria-pagecache-buffer-size=8M --key-buffer-size=8M --max-connections=500 --performance-schema=OFF --log-error=$W/my/err.log" & PIDS+=($!); PID_OF[$1]=$!
    for i in $(seq 300); do mariadb -uroot -S $W/my/sock -e 'select 1' >/dev/null 2>&1 && break; sleep 1; done
    mariadb -uroot -S $W/my/sock -e 'create database if not exists sbtest';;
  esac
}
# Stops it (PostgreSQL by pg_ctl, the others by their process id) and waits for it to end.
stop() {
  case $1 in
  postgres) su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast -w" >/dev/null 2>&1;;
  *) local p=${PID_OF[$1]}; kill $p 2>/dev/null; for i in $(seq 120); do kill -0 $p 2>/dev/null || break; sleep 0.5; done;;
  esac
}
if [ "$CLIENT" = bench ] && [ "$TRIALS" != 1 ]; then
  # Interleaved: every system loaded and left running in its cgroup, then TRIALS rounds of each system in turn.
  loaded=""
  for sys in $SYSTEMS; do cg $sys >/dev/null; start $sys; bench_load $sys && loaded="$loaded $sys"; done
  for round in $(seq "$TRIALS"); do for sys in $loaded; do bench_run $sys $round; done; done
  bench_ratios
  for sys in $SYSTEMS; do stop $sys; done
  exit 0
fi
for sys in $SYSTEMS; do
  cg $sys >/dev/null
  case $sys in permafrost) rm -rf "$W/pf";; postgres) rm -rf "$W/pg";; mariadb) rm -rf "$W/my";; esac
  start $sys
  case $CLIENT/$sys in
  bench/*) run_bench $sys;;
  */permafrost) run_tpcc permafrost --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=55621 --pgsql-user=postgres --pgsql-db=postgres;;
  */postgres) run_tpcc postgres --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=55622 --pgsql-user=postgres --pgsql-db=postgres;;
  */mariadb) run_tpcc mariadb --db-driver=mysql --mysql-socket=$W/my/sock --mysql-user=root --mysql-db=sbtest;;
  esac
  stop $sys
done
