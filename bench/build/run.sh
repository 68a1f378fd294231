#!/usr/bin/env bash
# Build benchmarks for the default recipe (its default arch fallback, 8.0;8.6;9.0+PTX), side by
# side in one run: cold -j1 vs -j2, no-op rebuild, and a ccache-warm rebuild vs cold.
# Usage: bench/build/run.sh [opforge binary]   (prints a table; results go to bench/results/build.txt)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
opforge=${1:-$here/build/opforge}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OPFORGE_CACHE_DIR="$work/probe-cache"
recipe="$here/recipes/default.toml"
now() { date +%s.%N; }
build() {  # build BUILD_DIR JOBS [extra flags...] → seconds
  local dir=$1 jobs=$2; shift 2
  local t0; t0=$(now)
  "$opforge" build "$recipe" --build-dir "$dir" --dist-dir "$work/dist" -j "$jobs" "$@" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
  echo "$(now) - $t0" | bc
}
median() { sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }

"$opforge" plan "$recipe" > /dev/null   # fill the probe cache
j1=$(build "$work/b1" 1); h1=$(sha256sum "$work"/dist/*.whl | cut -c1-16); rm -rf "$work/dist"
j2=$(build "$work/b2" 2); h2=$(sha256sum "$work"/dist/*.whl | cut -c1-16)
noop=$(for i in 1 2 3 4 5 6 7; do build "$work/b2" 2; done | median)
export CCACHE_DIR="$work/ccache"
cc_cold=$(build "$work/c1" 2 --cache ccache)
rm -rf "$work/c1"
cc_warm=$(build "$work/c1" 2 --cache ccache)
hits=$(ccache --print-stats 2>/dev/null | awk -F'\t' '$1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m+=$2} END{printf "%d hits, %d misses", h, m}')

printf 'opforge build benchmarks (%s, %s cores)\n' "$(date -u +%F)" "$(nproc)"
printf '%-44s %8.2f s\n' "cold build -j1" "$j1"
printf '%-44s %8.2f s   speedup %.2fx (target >= 1.6x)\n' "cold build -j2" "$j2" "$(echo "$j1/$j2" | bc -l)"
printf '%-44s %s / %s (%s)\n' "wheel sha256 -j1 / -j2" "$h1" "$h2" "$([ "$h1" = "$h2" ] && echo identical || echo DIFFERENT)"
printf '%-44s %8.3f s   (target <= 0.2 s)\n' "no-op rebuild, median of 7" "$noop"
printf '%-44s %8.2f s\n' "cold build -j2 through ccache (empty cache)" "$cc_cold"
printf '%-44s %8.2f s   %.1fx faster than cold -j2 (target >= 5x); %s\n' "rebuild after deleting the build folder" "$cc_warm" "$(echo "$j2/$cc_warm" | bc -l)" "$hits"
