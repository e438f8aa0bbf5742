#!/usr/bin/env bash
# The anti-caching paper's YCSB comparison with one client for every system: `BIN bench ycsb` against Permafrost
# (`permafrost serve`, over the PostgreSQL protocol), MariaDB (InnoDB, through its own driver) and MariaDB +
# memcached (cache-aside reads, invalidate on write, as the paper's MySQL + memcached), each in a memory cgroup of
# BUDGET + EXTRA MiB (EXTRA default 128): Permafrost --memory-limit BUDGET (command log sync); MariaDB innodb_buffer_pool_size=BUDGET,
# O_DIRECT, flush at commit; MariaDB + memcached share the budget, half each (MEMCACHED_SHARE percent to memcached,
# default 50), both in one cgroup. Every run loads RECORDS rows of 1 KB (10 fields of 100 bytes) afresh, then runs
# the mix for SECS seconds after a warm-up of WARMUP (default 10), 2 client threads with 8 connections each, one
# statement in flight per connection (16 in all), Zipfian keys of skew SKEW; every read is verified.
# usage: scripts/ycsb-peers.sh BIN BUDGET_MIB RECORDS SECS ["SYSTEMS"] ["MIXES"] ["SKEWS"]
#   SYSTEMS: any of "permafrost mariadb mariadb+memcached" (default all three); MIXES: read-only read-heavy
#   write-heavy (default all); SKEWS: Zipfian constants (default "1.0"). ROUNDS=N (default 1): N interleaved rounds.
#   Reports: OUT/SYSTEM-MIX-SKEW-rROUND.json (OUT default /tmp/ycsb-peers). Prints one line per run and, per mix and
#   skew, Permafrost's throughput over each peer's in each round.
# Example (8x memory, the paper's headline): scripts/ycsb-peers.sh target/release/permafrost 64 500000 30
# Needs root (cgroups v1 at /sys/fs/cgroup/memory); installs mariadb-server and memcached when missing.
set -u
BIN=$(realpath "$1"); B=$2; N=$3; SECS=$4
SYSTEMS=${5:-"permafrost mariadb mariadb+memcached"}; MIXES=${6:-"read-only read-heavy write-heavy"}; SKEWS=${7:-1.0}
ROUNDS=${ROUNDS:-1}; EXTRA=${EXTRA:-128}; WARMUP=${WARMUP:-10}; OUT=${OUT:-/tmp/ycsb-peers}; SHARE=${MEMCACHED_SHARE:-50}
need=""; command -v mariadbd >/dev/null || need="$need mariadb-server"; command -v memcached >/dev/null || need="$need memcached"
if [ -n "$need" ]; then apt-get update -qq >/dev/null; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null 2>&1; fi
mkdir -p "$OUT"
W=$(mktemp -d /tmp/ycsbpeers.XXXX); chmod 777 "$W"
LIMIT=$(( (B + EXTRA) * 1024 * 1024 ))
MC_MB=$(( B * SHARE / 100 )); POOL_MC=$(( B - MC_MB ))
cg() { local d=/sys/fs/cgroup/memory/ycsbpeers-$1; rmdir $d 2>/dev/null; mkdir -p $d; echo $LIMIT > $d/memory.limit_in_bytes; echo 0 > $d/memory.swappiness 2>/dev/null; echo $d; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; sleep 3; rm -rf "$W"; for s in permafrost mariadb mcd; do rmdir /sys/fs/cgroup/memory/ycsbpeers-$s 2>/dev/null; done; }
trap cleanup EXIT

start_mariadb() {  # name, buffer pool MiB, cgroup dir
  local dir=$W/$1
  mkdir -p $dir; mariadb-install-db --user=root --datadir=$dir/data --auth-root-authentication-method=normal >/dev/null 2>&1
  sh -c "echo \$\$ > $3/tasks; exec mariadbd --user=root --datadir=$dir/data --socket=$dir/sock --pid-file=$dir/pid --skip-networking --innodb-buffer-pool-size=${2}M --innodb-flush-method=O_DIRECT --innodb-flush-log-at-trx-commit=1 --innodb-log-file-size=256M --aria-pagecache-buffer-size=8M --key-buffer-size=8M --max-connections=500 --performance-schema=OFF --log-error=$dir/err.log" & PIDS+=($!)
  for i in $(seq 120); do mariadb -uroot -S $dir/sock -e 'select 1' >/dev/null 2>&1 && break; sleep 1; done
  mariadb -uroot -S $dir/sock -e 'create database if not exists ycsb'
}
declare -A TARGET
for sys in $SYSTEMS; do
  case $sys in
  permafrost)
    d=$(cg permafrost)
    sh -c "echo \$\$ > $d/tasks; exec $BIN serve --data-dir $W/pf --listen 127.0.0.1:55641 --metrics-listen off --memory-limit ${B}MiB" >"$W/pf.log" 2>&1 & PIDS+=($!)
    for i in $(seq 60); do (exec 3<>/dev/tcp/127.0.0.1/55641) 2>/dev/null && break; sleep 0.5; done
    TARGET[$sys]="--target server=127.0.0.1:55641";;
  mariadb)
    start_mariadb my $B "$(cg mariadb)"
    TARGET[$sys]="--target mariadb=mysql://root@localhost/ycsb?socket=$W/my/sock";;
  mariadb+memcached)
    d=$(cg mcd)
    start_mariadb mc $POOL_MC "$d"
    sh -c "echo \$\$ > $d/tasks; exec memcached -u root -s $W/mc.sock -a 0700 -m $MC_MB -t 2 -c 1024" >"$W/memcached.log" 2>&1 & PIDS+=($!)
    for i in $(seq 60); do [ -S $W/mc.sock ] && break; sleep 0.5; done
    TARGET[$sys]="--target mariadb=mysql://root@localhost/ycsb?socket=$W/mc/sock --memcached $W/mc.sock";;
  *) echo "unknown system $sys"; exit 2;;
  esac
done

for r in $(seq $ROUNDS); do
  for m in $MIXES; do for s in $SKEWS; do
    order=$SYSTEMS; [ $(( r % 2 )) = 0 ] && order=$(echo $SYSTEMS | tr ' ' '\n' | tac | tr '\n' ' ')
    for sys in $order; do
      f="$OUT/$sys-$m-$s-r$r.json"
      "$BIN" bench ycsb ${TARGET[$sys]} --records $N --mix $m --skew $s --clients 2 --connections 16 --in-flight 8 \
        --warmup $WARMUP --duration $SECS --quiet --json "$f" >"$W/run.out" 2>&1 || { echo "round=$r $sys $m skew=$s FAILED: $(tail -3 $W/run.out | tr '\n' ' ')"; continue; }
      python3 - "$f" "$sys" "$m" "$s" "$r" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"round={sys.argv[5]} {sys.argv[2]:<18} {sys.argv[3]:<11} skew={sys.argv[4]} ops/s={r['throughput_tps']:<10.1f} "
      f"verify_errors={r['verify_errors']} failed={r.get('failed', 0)} aborted={r.get('aborted_user', 0)}")
PY
    done
  done; done
done
python3 - "$OUT" "$ROUNDS" "$SYSTEMS" "$MIXES" "$SKEWS" <<'PY'
import json, os, sys
out, rounds, systems, mixes, skews = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
def tps(sys_, m, s, r):
    f = os.path.join(out, f"{sys_}-{m}-{s}-r{r}.json")
    return json.load(open(f))["throughput_tps"] if os.path.exists(f) else None
for m in mixes:
    for s in skews:
        for peer in [p for p in systems if p != "permafrost"]:
            ratios = [a / b for a, b in ((tps("permafrost", m, s, r), tps(peer, m, s, r)) for r in range(1, rounds + 1)) if a and b]
            if ratios:
                print(f"permafrost / {peer} {m} skew={s}: " + " ".join(f"{x:.2f}" for x in ratios))
PY
