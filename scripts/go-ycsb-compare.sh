#!/usr/bin/env bash
# The public YCSB client of issue 41's judgement, unmodified: go-ycsb (pingcap/go-ycsb
# v1.0.3, built here from the Go module proxy) against Permafrost (pg driver), PostgreSQL 15
# (pg driver) and MariaDB (mysql driver), each in a memory cgroup of BUDGET + 128 MiB (as
# ../shared/tools/sysbench-compare.sh): Permafrost with --memory-limit BUDGET, PostgreSQL
# with shared_buffers=BUDGET, MariaDB with innodb_buffer_pool_size=BUDGET. For each system:
# load RECORDS records of 1 KB (10 fields of 100 bytes) with 16 threads, check the row
# count, then run each mix for OPS operations, scrambled Zipfian keys, 16 threads. Prints
# one line per (system, mix).
#
# Usage: scripts/go-ycsb-compare.sh BIN BUDGET_MIB RECORDS OPS ["SYSTEMS"] ["MIXES"]
#   SYSTEMS: any of "permafrost postgres mariadb" (default all three)
#   MIXES: go-ycsb workload letters (default "c b a": read-only, read-heavy 95/5, 50/50)
# Example (8x memory): scripts/go-ycsb-compare.sh target/release/permafrost 64 500000 300000
# Needs root (cgroups v1 at /sys/fs/cgroup/memory), go (1.26), psql; installs what is missing.
set -u
BIN=$1; B=$2; N=$3; OPS=$4; SYSTEMS=${5:-"permafrost postgres mariadb"}; MIXES=${6:-"c b a"}
GY_DIR=${GY_DIR:-/tmp/go-ycsb-v1.0.3}
Y=$GY_DIR/go-ycsb
if [ ! -x "$Y" ]; then
  # `go install` refuses a module with replace directives: build inside its source.
  export GOPATH=${GOPATH:-$GY_DIR/gopath}
  src=$(go mod download -json github.com/pingcap/go-ycsb@v1.0.3 | python3 -c "import json,sys;print(json.load(sys.stdin)['Dir'])") || exit 1
  rm -rf "$GY_DIR/src"; cp -r "$src" "$GY_DIR/src"; chmod -R u+w "$GY_DIR/src"
  (cd "$GY_DIR/src" && go build -o "$Y" ./cmd/go-ycsb) || { echo "go-ycsb build failed"; exit 1; }
fi
WL=$GY_DIR/src/workloads
need=""; command -v mariadbd >/dev/null || need="$need mariadb-server"; command -v psql >/dev/null || need="$need postgresql-client"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need="$need postgresql"
if [ -n "$need" ]; then apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null 2>&1; fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
W=$(mktemp -d /tmp/gycmp.XXXX); chmod 777 "$W"
LIMIT=$(( (B + 128) * 1024 * 1024 ))
cg() { local d=/sys/fs/cgroup/memory/gycmp-$1; rmdir $d 2>/dev/null; mkdir -p $d; echo $LIMIT > $d/memory.limit_in_bytes; echo 0 > $d/memory.swappiness 2>/dev/null; echo $d; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; sleep 2; su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1; rm -rf "$W"; for s in $SYSTEMS; do rmdir /sys/fs/cgroup/memory/gycmp-$s 2>/dev/null; done; }
trap cleanup EXIT
common="-p recordcount=$N -p threadcount=16 -p requestdistribution=zipfian"
run_all() {  # system driver count-command driver-args...
  local sys=$1 driver=$2 count=$3; shift 3
  local out; out=$("$Y" load "$driver" -P "$WL/workloadc" "$@" $common 2>&1)
  printf '%-10s %-6s %s\n' "$sys" load "$(echo "$out" | grep -E '^TOTAL' | tail -1 | cut -c1-60)"
  printf '%-10s rows after load: %s (of %s)\n' "$sys" "$(eval "$count")" "$N"
  for m in $MIXES; do
    out=$("$Y" run "$driver" -P "$WL/workload$m" "$@" $common -p operationcount=$OPS 2>&1)
    ops=$(echo "$out" | sed -n 's/^TOTAL .*OPS: \([0-9.]*\),.*/\1/p' | tail -1)
    errs=$(echo "$out" | grep -c '_ERROR' || true)
    printf '%-10s workload%-2s ops/s=%-10s error-lines=%s\n' "$sys" "$m" "${ops:-FAILED}" "$errs"
  done
}
for sys in $SYSTEMS; do
  d=$(cg $sys)
  case $sys in
  permafrost)
    sh -c "echo \$\$ > $d/tasks; exec $BIN serve --data-dir $W/pf --listen 127.0.0.1:55631 --metrics-listen off --memory-limit ${B}MiB" >"$W/pf.log" 2>&1 & PIDS+=($!)
    for i in $(seq 60); do psql -h 127.0.0.1 -p 55631 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
    run_all permafrost pg "psql -h 127.0.0.1 -p 55631 -U postgres -d postgres -Atc 'select count(*) from usertable'" \
      -p pg.host=127.0.0.1 -p pg.port=55631 -p pg.user=postgres -p pg.db=postgres -p pg.sslmode=disable
    kill ${PIDS[-1]}; sleep 2;;
  postgres)
    su postgres -c "$PGBIN/initdb -D $W/pg -A trust -U postgres" >/dev/null 2>&1
    sh -c "echo \$\$ > $d/tasks; exec su postgres -c \"$PGBIN/postgres -D $W/pg -p 55632 -k $W -c listen_addresses=127.0.0.1 -c shared_buffers=${B}MB -c synchronous_commit=on -c max_connections=300\"" >"$W/pg.log" 2>&1 & PIDS+=($!)
    for i in $(seq 60); do psql -h 127.0.0.1 -p 55632 -U postgres -d postgres -Atc 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
    run_all postgres pg "psql -h 127.0.0.1 -p 55632 -U postgres -d postgres -Atc 'select count(*) from usertable'" \
      -p pg.host=127.0.0.1 -p pg.port=55632 -p pg.user=postgres -p pg.db=postgres -p pg.sslmode=disable
    su postgres -c "$PGBIN/pg_ctl -D $W/pg stop -m fast" >/dev/null 2>&1;;
  mariadb)
    mkdir -p $W/my; mariadb-install-db --user=root --datadir=$W/my/data --auth-root-authentication-method=normal >/dev/null 2>&1
    sh -c "echo \$\$ > $d/tasks; exec mariadbd --user=root --datadir=$W/my/data --socket=$W/my/sock --pid-file=$W/my/pid --bind-address=127.0.0.1 --port=55633 --innodb-buffer-pool-size=${B}M --innodb-flush-method=O_DIRECT --innodb-flush-log-at-trx-commit=1 --max-connections=500 --performance-schema=OFF --log-error=$W/my/err.log" & PIDS+=($!)
    for i in $(seq 60); do mariadb -uroot -S $W/my/sock -e 'select 1' >/dev/null 2>&1 && break; sleep 1; done
    mariadb -uroot -S $W/my/sock -e "create database if not exists test; create user if not exists 'ycsb'@'127.0.0.1'; grant all on *.* to 'ycsb'@'127.0.0.1'"
    run_all mariadb mysql "mariadb -uroot -S $W/my/sock -N -e 'select count(*) from test.usertable'" \
      -p mysql.host=127.0.0.1 -p mysql.port=55633 -p mysql.user=ycsb -p mysql.db=test
    kill ${PIDS[-1]}; sleep 3;;
  esac
done
