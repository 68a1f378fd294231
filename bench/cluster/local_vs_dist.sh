#!/usr/bin/env bash
# The price of distribution, and what a real cluster would give. In one run, from fresh build
# folders and empty sccache caches, the default ops (one architecture, 9.0):
#   1. compiled here through sccache (no scheduler);
#   2. compiled through sccache-dist: a scheduler and two build servers on this machine
#      (tests/cluster/sccache_dist.sh), which share its cores, so no speed-up can show here;
#   3. the same again (the servers hold the toolchains now).
# Wall and CPU time of each (CPU: /usr/bin/time's user+system of the whole tree, servers excluded),
# the steps each server ran, and the wheel's sha256 (the same). Target: distributed <= 1.15x local
# wall on the same cores. Then, from ninja's own per-step times of the local build, the wall time
# of that build on N build nodes of 32 cores each (N = 4, 16, 64): the steps packed longest first
# onto N*32 slots, never below the longest single step (the critical path).
#   bench/cluster/local_vs_dist.sh OPFORGE SCCACHE_BIN_DIR [RESULTS_FILE]
#   (SCCACHE_BIN_DIR holds sccache and sccache-dist: .venv-tools/bin after scripts/deps)
set -euo pipefail
opforge=$(realpath "$1") bin=$(realpath "$2") results=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/opforge-bench-cluster.XXXXXX)
export PATH="$bin:$PATH" SCCACHE_DIST="$bin/sccache-dist" SCHED_PORT=10695 SOURCE_DATE_EPOCH=1700000000
cluster="$src/tests/cluster/sccache_dist.sh"
trap '"$cluster" stop "$work/cluster" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$cluster" recipe "$work/recipe.toml" "$src"
"$cluster" recipe "$work/dist.toml" "$src" "http://127.0.0.1:$SCHED_PORT"
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
run() {  # run NAME RECIPE: one build, timed
  local t0 t1
  t0=$(secs)
  SCCACHE_DIR="$work/$1/sccache" /usr/bin/time -f "%U %S" -o "$work/$1.cpu" "$opforge" build "$2" \
    --build-dir "$work/$1/b" --dist-dir "$work/$1/d" >"$work/$1.txt" 2>&1 || { cat "$work/$1.txt"; exit 1; }
  t1=$(secs)
  python3 -c "print(f'{$t1 - $t0:.1f}')" >"$work/$1.wall"
}
run local "$work/recipe.toml"
"$cluster" start "$work/cluster" 2
OPFORGE_SCHEDULER_TOKEN=$(cat "$work/cluster/token") run dist "$work/dist.toml"
# Again from a fresh folder and an empty client cache: the servers now hold the toolchains (sccache
# sends them once per server), so this is what every later build pays.
OPFORGE_SCHEDULER_TOKEN=$(cat "$work/cluster/token") run dist_warm "$work/dist.toml"
"$cluster" stop "$work/cluster"
python3 - "$work" "$(nproc)" <<'PY' | tee "$work/report.txt"
import glob, hashlib, heapq, json, sys
work, cores = sys.argv[1], int(sys.argv[2])
def cpu(name):
    u, s = open(f"{work}/{name}.cpu").read().split()[:2]
    return float(u) + float(s)
def wall(name): return float(open(f"{work}/{name}.wall").read())
def sha(name): return hashlib.sha256(open(glob.glob(f"{work}/{name}/d/*.whl")[0], "rb").read()).hexdigest()
def steps(name):
    rec = json.load(open(glob.glob(f"{work}/{name}/d/*.opforge-record.json")[0]))
    return rec["inputs"].get("compile_steps", {}).get("sccache", {})
print(f"machine: {cores} cores; the default ops, arch 9.0, cold sccache caches")
for name in ("local", "dist", "dist_warm"):
    print(f"{name:6} wall {wall(name):7.1f} s   cpu {cpu(name):7.1f} s   steps {json.dumps(steps(name), sort_keys=True)}")
print(f"same wheel: {sha('local') == sha('dist') == sha('dist_warm')} ({sha('local')[:16]})")
print(f"distributed / local wall: {wall('dist') / wall('local'):.2f}x first (toolchains sent to the servers), "
      f"{wall('dist_warm') / wall('local'):.2f}x after (target <= 1.15x on the same cores)")
# ninja's per-step times of the local build (.ninja_log v5: start end mtime output hash).
durs = []
for line in open(f"{work}/local/b/.ninja_log"):
    if line.startswith("#"): continue
    start, end, _, out = line.split("\t")[:4]
    durs.append(((int(end) - int(start)) / 1000.0, out))
durs.sort(reverse=True)
total = sum(d for d, _ in durs)
print(f"steps: {len(durs)}, {total:.1f} s of compile time in all; the longest {durs[0][0]:.1f} s ({durs[0][1].split('/')[-1]})")
for nodes in (1, 4, 16, 64):
    slots = [0.0] * (nodes * 32)
    heapq.heapify(slots)
    for d, _ in durs:  # longest first, each onto the slot that frees first
        heapq.heappush(slots, heapq.heappop(slots) + d)
    print(f"projected on {nodes:2} node(s) x 32 cores: {max(slots):6.1f} s of compiling (critical path {durs[0][0]:.1f} s) plus each step's transfer")
PY
if [ -n "$results" ]; then
  { echo "== bench/cluster/local_vs_dist.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$src" rev-parse --short HEAD)"; cat "$work/report.txt"; echo; } >>"$results"
fi
