#!/usr/bin/env bash
# `permafrost bench experiment paper` on a fresh Debian machine: installs what it starts (MariaDB, memcached) and the
# charts' font from Debian packages, builds the release binary, and runs the experiment, which starts Permafrost,
# MariaDB and MariaDB + memcached itself, each in a memory cgroup of the same size (root: cgroups), and stops them
# by process id. Writes OUT/paper.json, paper.png and paper.md (OUT: --out, default docs/results).
# usage: scripts/paper.sh [bench experiment options...]   e.g. scripts/paper.sh --rounds 3
#   Default size: a 256 MiB budget, data at 1, 2, 4 and 8x it (2 GiB at 8x), three mixes, skews 1.5, 1.0 and 0.5:
#   108 YCSB runs, then TPC-C at 1-8x, Voter and TATP at 1 and 4x both ways (40 runs), each 10 s warm-up + 20 s
#   measured, with loads and checks about 100 minutes on 2 cores.
set -eu
cd "$(dirname "$0")/.."
need=""
command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || need="$need mariadb-server"
command -v memcached >/dev/null || [ -x /usr/bin/memcached ] || need="$need memcached"
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need="$need fonts-dejavu-core"
if [ -n "$need" ]; then
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
cargo build --release -q -p permafrost-cli
exec target/release/permafrost bench experiment paper "$@"
