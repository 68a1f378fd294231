#!/usr/bin/env bash
# bench/cross/run.sh OPFORGE [OUT]: building for Grace (aarch64) from this x86-64 machine, three
# ways side by side in one run, wall and CPU seconds (user + system of everything each waited for):
#   x86_64  `opforge build default` for this machine                      (TORCH_CUDA_ARCH_LIST=9.0)
#   cross   `opforge build default --platform aarch64`                    (the same recipe and arch)
#   host compiles, twice: every C/C++ compile step of the cross build's build.ninja run again, two
#           at a time, (a) here with Debian's aarch64-linux-gnu-g++ and (b) inside an arm64 Debian
#           root under qemu-user-static with the root's own native g++: what building "natively"
#           under emulation costs (cibuildwheel's way), on identical sources and flags.
# Ratios: cross/x86_64 (whole builds; target <= 1.2) and emulated/cross (host compiles; target >= 10).
# The nvcc step is not replayed under emulation (NVIDIA's aarch64 nvcc, cicc and ptxas would run
# emulated too): the ratio is measured on the host compiles only, and said as such.
# Needs: the arm64 root (tests/install/make_root.sh bookworm-arm64), as root (chroot), and network
# once (apt-get in a private copy of the root: g++, libaio-dev, python3-dev; not timed).
# Results are appended to OUT (default bench/results/cross.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
opforge=$(realpath "$1")
out="${2:-$repo/bench/results/cross.txt}"
work=${OPFORGE_BENCH_WORK:-/tmp/opforge-bench-cross}
mkdir -p "$work"
export TORCH_CUDA_ARCH_LIST=9.0 OPFORGE_CACHE_DIR="$work/cache"

# timed LABEL CMD...: runs CMD, appends "LABEL wall user sys" to $work/times.
timed() {
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time.$label" "$@"
  echo "$label $(cat "$work/time.$label")" >> "$work/times"
}

rm -f "$work/times"
# The aarch64 runtime is fetched once, before anything is timed (the cache is part of neither).
"$opforge" plan default --platform aarch64 >/dev/null
"$opforge" build default --platform aarch64 --build-dir "$work/warm" --dist-dir "$work/warm-dist" >/dev/null
for side in x86_64 aarch64; do
  rm -rf "$work/$side"
  timed "$side" "$opforge" build default --platform "$side" --build-dir "$work/$side/build" \
    --dist-dir "$work/$side/dist" -q
done

# The compile steps of the cross build, as ninja ran them.
ninja -C "$work/aarch64/build" -t commands | grep -E '^/usr/bin/aarch64-linux-gnu-(g\+\+|gcc) .* -c ' > "$work/compiles.cross"
# In the root: its own compilers, and its own Python headers (python3-dev) for the stable-ABI hook.
sed -e 's#^/usr/bin/aarch64-linux-gnu-g++ #g++ #' -e 's#^/usr/bin/aarch64-linux-gnu-gcc #gcc #' \
  -e 's#-I[^ ]*/include/python3\.[0-9]* #-I/usr/include/python3.11 #' \
  "$work/compiles.cross" > "$work/compiles.native"
echo "compile steps: $(wc -l < "$work/compiles.cross")"

# (a) here, with the cross compiler, into a fresh copy of the object folder.
timed cross_compiles sh -c "xargs -P2 -d '\n' -I{} sh -c '{}' < '$work/compiles.cross'"

# (b) in a private copy of the arm64 root, with the same paths: the source tree, the build folder,
# the runtime headers and the toolkit's headers copied in at their own absolute paths.
. "$repo/tests/install/make_root.sh"
use_root bookworm-arm64
root="$work/root"
if [ ! -x "$root/usr/bin/g++" ]; then
  rm -rf "$root" && mkdir -p "$root"
  tar -C "$ROOT" --exclude=./opt --exclude='./proc/*' -cf - . | tar -C "$root" -xf -
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends g++ libaio-dev python3-dev" >/dev/null
fi
for dir in "$repo/src/kernels" "$work/aarch64/build" "$OPFORGE_CACHE_DIR/toolkits" "$(readlink -f /usr/local/cuda)/include"; do
  mkdir -p "$root$dir" && cp -a "$dir/." "$root$dir/"
done
cp "$work/compiles.native" "$root/tmp/compiles.native"
timed emulated_compiles chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin \
  sh -c "xargs -P2 -d '\n' -I{} sh -c '{}' < /tmp/compiles.native"

read -r _ xw xu xs < <(grep '^x86_64 ' "$work/times")
read -r _ aw au as < <(grep '^aarch64 ' "$work/times")
read -r _ cw cu cs < <(grep '^cross_compiles ' "$work/times")
read -r _ ew eu es < <(grep '^emulated_compiles ' "$work/times")
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "default recipe, TORCH_CUDA_ARCH_LIST=9.0, no compiler cache; seconds (wall / CPU = user+sys)"
  awk -v w="$xw" -v c="$(echo "$xu + $xs" | bc)" 'BEGIN { printf "  x86_64 build            %7.1f / %7.1f\n", w, c }'
  awk -v w="$aw" -v c="$(echo "$au + $as" | bc)" 'BEGIN { printf "  aarch64 cross-build     %7.1f / %7.1f\n", w, c }'
  awk -v a="$aw" -v x="$xw" -v ac="$(echo "$au + $as" | bc)" -v xc="$(echo "$xu + $xs" | bc)" \
    'BEGIN { printf "  cross / x86_64          %7.2fx wall, %5.2fx CPU (target <= 1.2)\n", a / x, ac / xc }'
  echo "host compiles of the cross build ($(wc -l < "$work/compiles.cross") steps, two at a time)"
  awk -v w="$cw" -v c="$(echo "$cu + $cs" | bc)" 'BEGIN { printf "  cross g++ here          %7.1f / %7.1f\n", w, c }'
  awk -v w="$ew" -v c="$(echo "$eu + $es" | bc)" 'BEGIN { printf "  native g++ under QEMU   %7.1f / %7.1f\n", w, c }'
  awk -v e="$ew" -v c="$cw" -v ec="$(echo "$eu + $es" | bc)" -v cc="$(echo "$cu + $cs" | bc)" \
    'BEGIN { printf "  emulated / cross        %7.1fx wall, %5.1fx CPU (target >= 10)\n", e / c, ec / cc }'
  echo
} | tee -a "$out"
