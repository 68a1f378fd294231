#!/usr/bin/env bash
# The price of distribution for a real project's command build: causal-conv1d 1.7.0 (its PyPI
# sdist, torch's BuildExtension with ninja, one architecture, 9.0), in one run, from fresh build
# folders and empty sccache caches:
#   1. compiled here, no compiler cache;
#   2. through sccache-dist: a scheduler and two build servers on this machine
#      (tests/cluster/sccache_dist.sh), which share its cores, so no speed-up can show here;
#   3. the same again (the servers hold the toolchains now).
# Wall time of each, the steps each server ran, the wheel's sha256 (the same). Target: distributed
# <= 1.15x local wall on the same cores. Then, from torch's own ninja log of the local build (the
# recipe's command copies it out of the scratch tree), the wall time on N build nodes of 32 cores
# (N = 4, 16, 64): the files packed longest first, never below the longest single file.
#   bench/cluster/command_vs_dist.sh OPFORGE SCCACHE_BIN_DIR [RESULTS_FILE]
#   (needs scripts/torch-venv's torch 2.14 environment; SCCACHE_BIN_DIR: .venv-tools/bin)
set -euo pipefail
opforge=$(realpath "$1") bin=$(realpath "$2") results=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
venv=${OPFORGE_TORCH214_VENV:-$HOME/.cache/opforge/torch214-venv}
[ -x "$venv/bin/python" ] || { echo "the torch 2.14 environment ($venv) is missing: run scripts/torch-venv" >&2; exit 1; }
sdist=$("$src/tests/e2e/fetch_sdist.sh" causal-conv1d 1.7.0)
work=$(mktemp -d /tmp/opforge-bench-command.XXXXXX)
export PATH="$bin:$PATH" SCCACHE_DIST="$bin/sccache-dist" SCHED_PORT=10696 SOURCE_DATE_EPOCH=1700000000
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
cluster="$src/tests/cluster/sccache_dist.sh"
keep=0  # set when the wheels differ: the folders stay, for a look
trap '"$cluster" stop "$work/cluster" >/dev/null 2>&1 || true; [ "$keep" = 1 ] || rm -rf "$work"' EXIT
tar -xzf "$sdist" -C "$work"
recipe() {  # recipe FILE [SCHEDULER]
  cat >"$1" <<TOML
[package]
name = "causal-conv1d"
version = "1.7.0"
local_version = "none"

[source]
path = "$work/causal_conv1d-1.7.0"

[cuda]
version = "torch"
python = "$venv/bin/python"

[arch]
list = "9.0"

[build]
backend = "command"
# torch's ninja log (one line per file: start, end in ms) copied out of the scratch tree.
command = ["sh", "-c", "$venv/bin/python setup.py bdist_wheel && cp build/temp*/.ninja_log \"\$BENCH_NINJA_LOG\""]
TOML
  if [ -n "${2:-}" ]; then printf 'cache = "sccache"\nscheduler = "%s"\n' "$2" >>"$1"; fi
  printf '\n[build.env]\nCAUSAL_CONV1D_FORCE_BUILD = "TRUE"\n' >>"$1"
}
recipe "$work/local.toml"
recipe "$work/dist.toml" "http://127.0.0.1:$SCHED_PORT"
secs() { python3 -c "import time; print(f'{time.time():.3f}')"; }
run() {  # run NAME RECIPE: one build, timed
  local t0 t1
  t0=$(secs)
  BENCH_NINJA_LOG="$work/$1.ninja_log" OPFORGE_CACHE_DIR="$work/$1/cache" SCCACHE_DIR="$work/$1/sccache" \
    "$opforge" build "$2" --build-dir "$work/$1/b" --dist-dir "$work/$1/d" >"$work/$1.txt" 2>&1 ||
    { tail -40 "$work/$1.txt"; exit 1; }
  t1=$(secs)
  python3 -c "print(f'{$t1 - $t0:.1f}')" >"$work/$1.wall"
}
run local "$work/local.toml"
"$cluster" start "$work/cluster" 2
OPFORGE_SCHEDULER_TOKEN=$(cat "$work/cluster/token") run dist "$work/dist.toml"
OPFORGE_SCHEDULER_TOKEN=$(cat "$work/cluster/token") run dist_warm "$work/dist.toml"
"$cluster" stop "$work/cluster"
python3 - "$work" "$(nproc)" <<'PY' | tee "$work/report.txt"
import glob, hashlib, heapq, json, sys
work, cores = sys.argv[1], int(sys.argv[2])
def wall(name): return float(open(f"{work}/{name}.wall").read())
def sha(name): return hashlib.sha256(open(glob.glob(f"{work}/{name}/d/*.whl")[0], "rb").read()).hexdigest()
def steps(name):
    rec = json.load(open(glob.glob(f"{work}/{name}/d/*.opforge-record.json")[0]))
    return rec["inputs"].get("compile_steps", {}).get("sccache", {})
def said(name):
    return [l.strip() for l in open(f"{work}/{name}.txt") if l.startswith("sccache: ")]
print(f"machine: {cores} cores; causal-conv1d 1.7.0 (command build, torch 2.14, CUDA 13.0), arch 9.0, cold caches")
for name in ("local", "dist", "dist_warm"):
    print(f"{name:9} wall {wall(name):7.1f} s   steps {json.dumps(steps(name), sort_keys=True)}")
    for line in said(name): print(f"          {line}")
print(f"same wheel: {sha('local') == sha('dist') == sha('dist_warm')} ({sha('local')[:16]})")
print(f"distributed / local wall: {wall('dist') / wall('local'):.2f}x first (toolchains sent to the servers), "
      f"{wall('dist_warm') / wall('local'):.2f}x after (target <= 1.15x on the same cores)")
durs = []
for line in open(f"{work}/local.ninja_log"):
    if line.startswith("#"): continue
    start, end, _, out = line.split("\t")[:4]
    durs.append(((int(end) - int(start)) / 1000.0, out))
durs.sort(reverse=True)
total = sum(d for d, _ in durs)
print(f"files: {len(durs)}, {total:.1f} s of compile time in all (with this machine's 2 jobs at once); "
      f"the longest {durs[0][0]:.1f} s ({durs[0][1].split('/')[-1]})")
for nodes in (4, 16, 64):
    slots = [0.0] * (nodes * 32)
    heapq.heapify(slots)
    for d, _ in durs:
        heapq.heappush(slots, heapq.heappop(slots) + d)
    print(f"projected on {nodes:2} node(s) x 32 cores: {max(slots):6.1f} s of compiling (critical path "
          f"{durs[0][0]:.1f} s) plus each file's transfer")
PY
if grep -q "^same wheel: False" "$work/report.txt"; then keep=1; echo "the wheels differ: kept $work"; fi
if [ -n "$results" ]; then
  { echo "== bench/cluster/command_vs_dist.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$src" rev-parse --short HEAD)"; cat "$work/report.txt"; echo; } >>"$results"
fi
