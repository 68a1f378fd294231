#!/usr/bin/env bash
# bench/root/run.sh [OPFORGE] [OUT]: the default recipe built on this machine and inside the
# Debian 11 root of the install tests (`--root`), side by side in one run, each with a warm cache:
# every build is run once to warm its build folder, ccache-free, then timed from a clean build
# folder (objects rebuilt, probe caches and toolkit kept) REPEAT times, alternating host and root.
# Target: the root costs at most 10 % more wall time.
#   OPFORGE  the opforge to use (default: build/opforge)
#   OUT      where the figures go (default: bench/results/root.txt)
#   KEEP=DIR keeps the two wheels of the timed builds there (host.whl, root.whl)
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
opforge="${1:-$src/build/opforge}"
out="${2:-$src/bench/results/root.txt}"
repeat="${REPEAT:-2}"
ROOT_NAME=bullseye-dev ROOT_PACKAGES=python3,python3-pip,python3-venv,python3-dev,gcc,g++,ninja-build,libaio-dev
export ROOT_NAME ROOT_PACKAGES
source "$src/tests/install/root.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" OPFORGE_CACHE_DIR="$work/cache"
build() {  # build host|root: one build from an empty build folder, its wall seconds on stdout
  local where=$1 flags=()
  [ "$where" = root ] && flags=(--root "$ROOT")
  rm -rf "$work/$where/build" "$work/$where/dist"
  local t0 t1
  t0=$(date +%s.%N)
  "$opforge" build "$src/recipes/default.toml" "${flags[@]}" --build-dir "$work/$where/build" \
    --dist-dir "$work/$where/dist" > "$work/$where.log" 2>&1 || { cat "$work/$where.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$t0" "$t1"
}
mkdir -p "$work/host" "$work/root"
build host > /dev/null  # warm: probe caches, the compile-peak records
build root > /dev/null
host=() root=()
for _ in $(seq "$repeat"); do
  host+=("$(build host)")
  root+=("$(build root)")
done
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$work"/host/dist/*.whl "$KEEP/host.whl"
  cp "$work"/root/dist/*.whl "$KEEP/root.whl"
fi
summary=$(python3 - "${host[*]}" "${root[*]}" <<'PY'
import statistics, sys
h = [float(x) for x in sys.argv[1].split()]
r = [float(x) for x in sys.argv[2].split()]
mh, mr = statistics.median(h), statistics.median(r)
print(f"host (Debian 12, glibc 2.36): {' '.join(f'{x:.1f}' for x in h)} s, median {mh:.1f} s")
print(f"root (Debian 11, glibc 2.31): {' '.join(f'{x:.1f}' for x in r)} s, median {mr:.1f} s")
print(f"root / host: {mr / mh:.3f} ({(mr / mh - 1) * 100:+.1f} %; target <= +10 %)")
PY
)
{
  echo "# bench/root/run.sh — $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), REPEAT=$repeat, TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST"
  echo "# the default recipe from a clean build folder, warm probe caches, no ccache; alternating host and root"
  echo "host wheel: $(basename "$(ls "$work"/host/dist/*.whl)")"
  echo "root wheel: $(basename "$(ls "$work"/root/dist/*.whl)")"
  echo "$summary"
} | tee "$out"
