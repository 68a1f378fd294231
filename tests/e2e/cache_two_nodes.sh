#!/usr/bin/env bash
# Shared compile cache, end to end: two "nodes" (two build folders, two local ccache dirs) share one
# real redis-server. The second node must get >= 90% of its compilations from the remote cache.
#   cache_two_nodes.sh OPFORGE SOURCE_ROOT WORK_DIR [--bench]
# A missing tool (scripts/deps installs them all) fails in CI (CI=true) and skips (exit 77, CTest's
# SKIP_RETURN_CODE) elsewhere; --bench prints timings instead.
set -euo pipefail
opforge=$1; root=$(cd "$2" && pwd); work=$3; bench=${4:-}

for tool in redis-server redis-cli ccache python3; do
  command -v "$tool" >/dev/null && continue
  if [[ ${CI:-} == true ]]; then echo "FAIL: $tool is not installed (run scripts/deps)"; exit 1; fi
  echo "SKIP: $tool is not installed"; exit 77
done

rm -rf "$work"; mkdir -p "$work/redis"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --bind 127.0.0.1 --port "$port" --dir "$work/redis" --save "" --appendonly no \
  --protected-mode yes --daemonize no >"$work/redis/server.log" 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" ping >/dev/null || { echo "redis-server did not start:"; cat "$work/redis/server.log"; exit 1; }

# The default recipe with a short arch list, the ccache launcher and the shared remote.
recipe() {  # $1 = node folder
  cat <<TOML
[package]
name = "opforge-ops"
version = "0.1.0"
local_version = "cu{cuda_major}.g{commit}"

[source]
path = "$root"
ops_dir = "src/kernels"

[cuda]
version = "auto"

[compiler]
host = "auto"

[arch]
list = "8.0"

[ops]
overflow = "auto"
aio = "auto"
cpu_adam = "auto"
utils = "auto"

[build]
backend = "native"
jobs = "auto"
cache = "ccache"
remote = "redis://127.0.0.1:$port"
build_dir = "$1/build"
dist_dir = "$1/dist"
TOML
}

build_node() {  # $1 = node name; prints seconds taken
  local node="$work/$1"
  mkdir -p "$node"
  recipe "$node" >"$node/recipe.toml"
  export CCACHE_DIR="$node/ccache"
  # Paths under the source tree hash the same on every node; the build folder differs per node.
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
  export CCACHE_REMOTE_STORAGE="redis://127.0.0.1:$port"
  ccache --zero-stats >/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  "$opforge" build "$node/recipe.toml" >"$node/build.log" 2>&1 || { echo "build on node $1 failed:"; tail -30 "$node/build.log"; exit 1; }
  t1=$(date +%s.%N)
  ccache --print-stats >"$node/stats.txt"
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

stat() { awk -v k="$2" '$1 == k { print $2 }' "$work/$1/stats.txt"; }

ta=$(build_node a)
tb=$(build_node b)
hits=$(stat b remote_storage_hit); misses=$(stat b remote_storage_miss)
hits=${hits:-0}; misses=${misses:-0}
total=$((hits + misses))
echo "node a: ${ta}s, node b: ${tb}s; node b remote hits $hits of $total"
cmp -s "$work"/a/dist/*.whl "$work"/b/dist/*.whl && echo "wheels identical" || echo "NOTE: wheels differ"
if [ "$bench" = "--bench" ]; then
  python3 -c "print(f'second node vs first node: {$ta / $tb:.2f}x faster (target >= 3x)')"
  exit 0
fi
[ "$total" -gt 0 ] || { echo "FAIL: node b made no cacheable compilation"; exit 1; }
# opforge's own summary (from this build's ccache stats log) agrees with ccache's counters.
grep -F "ccache: $hits of $total compiles were cache hits (100%), $hits from remote storage" "$work/b/build.log" ||
  [ "$hits" -ne "$total" ] || { echo "FAIL: no matching ccache line in node b's output:"; cat "$work/b/build.log"; exit 1; }
grep "^ccache: " "$work/a/build.log" "$work/b/build.log"
cp "$work/b/build/ccache-stats.log" "$work/ccache-stats.node-b.log" 2>/dev/null || true
python3 -c "import sys; r = $hits / $total; print(f'remote hit rate {r:.0%}'); sys.exit(0 if r >= 0.9 else 1)"
