#!/usr/bin/env bash
# Second node vs first node with a shared ccache remote (redis), side by side in one run.
#   bench/cache/run.sh [OPFORGE]
# Part 1 (always): the mechanism opforge relies on — nvcc and gcc through ccache, two nodes with
# separate local cache dirs and build folders, one redis-server. Part 2 (when OPFORGE has a `build`
# command): the default recipe built by opforge on the two nodes (tests/e2e/cache_two_nodes.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
nvcc=${NVCC:-/usr/local/cuda-13.0/bin/nvcc}
work=$(mktemp -d /tmp/opforge-bench-cache.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/redis"
redis-server --bind 127.0.0.1 --port "$port" --dir "$work/redis" --save "" --appendonly no >/dev/null 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null || true; wait "$redis_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# A small op project: 4 CUDA files and 4 C++ files, like a bundled op set.
src="$work/src"; mkdir -p "$src"
for i in 1 2 3 4; do
  sed "s/scale/scale$i/g; s/demo_scale/demo_scale$i/" "$repo/tests/fixtures/setuptools_project/csrc/kernel.cu" >"$src/k$i.cu"
  printf '#include <vector>\n#include <algorithm>\n#include <string>\nint f%d(std::vector<int> v){std::sort(v.begin(),v.end());return v.empty()?0:v[0];}\n' "$i" >"$src/h$i.cpp"
done

node() {  # $1 = name; prints seconds
  local out="$work/$1"; mkdir -p "$out/obj"
  export CCACHE_DIR="$out/ccache" CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
  export CCACHE_REMOTE_STORAGE="redis://127.0.0.1:$port"
  ccache --zero-stats >/dev/null
  local t0; t0=$(date +%s.%N)
  for i in 1 2 3 4; do
    (cd "$src" && ccache "$nvcc" -O2 -Xcompiler -fPIC -gencode=arch=compute_80,code=sm_80 -c "k$i.cu" -o "$out/obj/k$i.o")
    (cd "$src" && ccache g++ -O2 -fPIC -c "h$i.cpp" -o "$out/obj/h$i.o")
  done
  local t1; t1=$(date +%s.%N)
  ccache --print-stats >"$out/stats.txt"
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}
ta=$(node a); tb=$(node b)
hits=$(awk '$1 == "remote_storage_hit" { print $2 }' "$work/b/stats.txt")
miss=$(awk '$1 == "remote_storage_miss" { print $2 }' "$work/b/stats.txt")
echo "mechanism (ccache $(ccache --version | head -1 | awk '{print $3}'), 4 nvcc + 4 g++ compiles, one sm_80):"
echo "  node a (cold): ${ta}s   node b (remote cache): ${tb}s   node b remote hits: $hits, misses: $miss"
python3 -c "print(f'  second node vs first node: {$ta / $tb:.1f}x faster (target >= 3x)')"
if [ -n "${1:-}" ]; then
  echo "opforge build, default recipe, two nodes:"
  "$repo/tests/e2e/cache_two_nodes.sh" "$1" "$repo" "$work/opforge" --bench || echo "  (skipped: see above)"
fi
