#!/usr/bin/env bash
# bench/cross/project_emulated.sh OPFORGE [OUT]: a real setup.py CUDA project for Grace (aarch64),
# causal-conv1d 1.7.0 (PyPI's sdist), one arch, two ways side by side in one run, wall and CPU
# seconds (user + system of everything each waited for), no compiler cache:
#   cross     `opforge build` with `platform = "aarch64"` here (as bench/cross/project.sh)
#   emulated  its setup.py run natively inside the arm64 root under qemu-user-static, as
#             cibuildwheel does: the root's python with PyPI's aarch64 torch 2.15.0 (/opt/torch215),
#             its own g++ and ninja, NVIDIA's aarch64 nvcc, crt, nvvm, runtime and CCCL wheels of the x86
#             toolkit's release as CUDA_HOME; MAX_JOBS = the cores. setup.py hardcodes ten
#             architectures: its list is cut to sm_90 (what opforge's [arch] list = "9.0" builds)
#             so that both compile the same code.
# Ratio: emulated / cross (target >= 10). OPFORGE_BENCH_LIMIT=SECONDS stops the emulated build
# after that much wall time and reports what it had used by then (the CPU of every process it
# started, finished or running, read from /proc) as a lower bound: "> N". Needs the arm64 root with torch (tests/install/make_root.sh
# bookworm-arm64-torch) and OPFORGE_TORCH_VENV (torch 2.15.0), as root; network once. The aarch64
# torch, runtime and toolkit are fetched before anything is timed. Appends to OUT (default
# bench/results/cross.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
opforge=$(realpath "$1")
out="${2:-$repo/bench/results/cross.txt}"
work=${OPFORGE_BENCH_WORK:-/tmp/opforge-bench-cross-emulated}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
rm -rf "$work" && mkdir -p "$work"
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
sdist=$("$repo/tests/e2e/fetch_sdist.sh" causal-conv1d 1.7.0)
. "$here/common.sh"  # timed, aarch64_toolkit, causal_conv1d_recipe, warm_aarch64_cache

# The emulated side's setup: the toolkit, setup.py's own needs, the sources with one arch.
. "$repo/tests/install/make_root.sh"
use_root bookworm-arm64-torch
inroot=/tmp/opforge-bench-emulated
stage="$ROOT$inroot"
trap 'rm -rf "$stage"' EXIT
rm -rf "$stage" && mkdir -p "$stage/pylib"
aarch64_toolkit "$stage/cuda13" "$work/tk-wheels"
python3 -m pip install -q --no-compile --target "$stage/pylib" "setuptools<80" wheel packaging
tar -xzf "$sdist" -C "$stage"
# Every -gencode pair but compute_90's goes: the same single arch as the cross-build.
python3 - "$stage/causal_conv1d-1.7.0/setup.py" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
s2 = re.sub(r'cc_flag\.append\("-gencode"\)\n(\s*)cc_flag\.append\("arch=compute_(?!90,)\d+,code=sm_\d+"\)',
            r'pass\n\1pass', s)
assert s2.count('arch=compute_') == 1 and 'compute_90,code=sm_90' in s2, "setup.py's arch list changed"
open(p, "w").write(s2)
PY
cat > "$stage/build.sh" <<STEPS
set -euo pipefail
cd $inroot/causal_conv1d-1.7.0
TIMEFORMAT='%R %U %S'
{ time python setup.py -q bdist_wheel > $inroot/build.log 2>&1; } 2> $inroot/time
STEPS

# Cross: warm the cache (aarch64 torch and runtime) with the small test extension, then the project.
warm_aarch64_cache
mkdir -p "$work/cross" && tar -xzf "$sdist" -C "$work/cross"
causal_conv1d_recipe "$work/cross/causal-conv1d.toml" aarch64 "$venv"
timed cross sh -c "cd '$work/cross' && '$opforge' build causal-conv1d.toml > build.log 2>&1" ||
  { tail -40 "$work/cross/build.log"; exit 1; }

# The emulated build in the background, so that a limit can stop it; its CPU so far is the sum
# over the process tree of utime + stime (running) and cutime + cstime (children it has reaped).
unshare --mount --propagation private -- sh -c "mount -t proc proc '$ROOT/proc' && mount --rbind /dev '$ROOT/dev' &&
  chroot '$ROOT' /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=$inroot/cuda13/bin:/opt/torch215/bin:/usr/bin:/bin \
    CUDA_HOME=$inroot/cuda13 MAX_JOBS=$(nproc) PYTHONPATH=$inroot/pylib CAUSAL_CONV1D_FORCE_BUILD=TRUE \
    /bin/bash $inroot/build.sh" &
emu=$!
tree_cpu() {  # tree_cpu PID: clock ticks of PID and its descendants
  local p=$1 u s cu cs c t=0
  read -r u s cu cs < <(cut -d' ' -f14-17 "/proc/$p/stat" 2>/dev/null) || { echo 0; return; }
  t=$((u + s + cu + cs))
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do t=$((t + $(tree_cpu "$c"))); done
  echo "$t"
}
start=$(date +%s.%N) limit=${OPFORGE_BENCH_LIMIT:-0} stopped=""
while kill -0 "$emu" 2>/dev/null; do
  sleep 5
  elapsed=$(echo "$(date +%s.%N) - $start" | bc)
  if [ "$limit" != 0 ] && [ "$(echo "$elapsed > $limit" | bc)" = 1 ]; then
    ticks=$(tree_cpu "$emu")
    stopped=$(echo "scale=1; $ticks / $(getconf CLK_TCK)" | bc)
    running=$(ps -eo args | grep -o '[a-z_0-9]*\.cu' | sort -u | tr '\n' ' ')
    pkill -KILL -P "$emu" 2>/dev/null; kill -KILL -- "$emu" 2>/dev/null
    pkill -KILL -f "$inroot/" 2>/dev/null || true
    break
  fi
done
if [ -n "$stopped" ]; then
  echo "emulated $elapsed $stopped 0 stopped" >> "$work/times"
else
  wait "$emu" || { tail -40 "$stage/build.log"; exit 1; }
  echo "emulated $(cat "$stage/time")" >> "$work/times"
fi
cross_whl=$(ls "$work"/cross/dist/*.whl)
so_machine() { mkdir -p "$work/u.$2" && (cd "$work/u.$2" && unzip -qo "$1") &&
  readelf -h "$(find "$work/u.$2" -name 'causal_conv1d_cuda*.so' | head -1)" | sed -n 's/^ *Machine: *//p'; }
machines="$(so_machine "$cross_whl" cross) / (stopped before its wheel)"
if [ -z "$stopped" ]; then
  native_whl=$(ls "$stage"/causal_conv1d-1.7.0/dist/*.whl)
  machines="$(so_machine "$cross_whl" cross) / $(so_machine "$native_whl" native)"
fi
read -r _ cw cu cs < <(grep '^cross ' "$work/times")
read -r _ ew eu es flag < <(grep '^emulated ' "$work/times")
gt=""
[ -z "${flag:-}" ] || gt="> "
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "causal-conv1d 1.7.0 (setup.py, torch 2.15.0), sm_90 only, no compiler cache; seconds (wall / CPU = user+sys)"
  awk -v w="$cw" -v c="$(echo "$cu + $cs" | bc)" 'BEGIN { printf "  aarch64 cross-build     %7.1f / %7.1f\n", w, c }'
  awk -v w="$ew" -v c="$(echo "$eu + $es" | bc)" -v g="$gt" 'BEGIN { printf "  emulated native build %2s%7.1f / %7.1f\n", g, w, c }'
  awk -v e="$ew" -v c="$cw" -v ec="$(echo "$eu + $es" | bc)" -v cc="$(echo "$cu + $cs" | bc)" -v g="$gt" \
    'BEGIN { printf "  emulated / cross      %2s%7.1fx wall, %s%5.1fx CPU (target >= 10)\n", g, e / c, g, ec / cc }'
  [ -z "$gt" ] || echo "  the emulated build was stopped after ${OPFORGE_BENCH_LIMIT} s (OPFORGE_BENCH_LIMIT) while compiling: ${running:-?}"
  echo "  extension machine (cross / emulated): $machines"
  echo
} | tee -a "$out"
