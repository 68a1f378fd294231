#!/usr/bin/env bash
# bench/cross/run.sh OPFORGE [OUT]: building for Grace (aarch64) from this x86-64 machine, three
# ways side by side in one run, wall and CPU seconds (user + system of everything each waited for):
#   x86_64  `opforge build default` for this machine                      (TORCH_CUDA_ARCH_LIST=9.0)
#   cross   `opforge build default --platform aarch64`                    (the same recipe and arch)
#   emulated build (OPFORGE_AARCH64_WHEEL=opforge's aarch64 wheel): the same recipe built inside the
#           root by opforge itself under QEMU, nvcc included
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

. "$here/common.sh"  # timed, aarch64_toolkit

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

# (c) With OPFORGE_AARCH64_WHEEL (scripts/dist --platform aarch64), the whole default recipe built
# natively in the root under QEMU by opforge's own aarch64 executable, with NVIDIA's aarch64 nvcc,
# crt, nvvm, runtime and CCCL wheels (the x86 toolkit's releases) laid out as /opt/cuda13: what a
# Grace node does for itself, and what cibuildwheel's way costs on this machine, nvcc included.
if [ -n "${OPFORGE_AARCH64_WHEEL:-}" ]; then
  tk="$root/opt/cuda13"
  if [ ! -x "$tk/bin/nvcc" ]; then
    rm -rf "$tk" "$work/tk-wheels"
    aarch64_toolkit "$tk" "$work/tk-wheels"
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c "apt-get install -y -qq --no-install-recommends ninja-build" >/dev/null
  fi
  rm -rf "$root/opt/opforge" "$root/tmp/native" && mkdir -p "$root/opt/opforge/bin" "$root/tmp/native"
  python3 -m zipfile -e "$OPFORGE_AARCH64_WHEEL" "$work/opforge-aarch64"
  cp "$work"/opforge-aarch64/opforge-*.data/scripts/opforge "$root/opt/opforge/bin/"
  cp -a "$work"/opforge-aarch64/opforge-*.data/data/share "$root/opt/opforge/"
  chmod +x "$root/opt/opforge/bin/opforge"
  mount -t proc proc "$root/proc"
  timed emulated_build chroot "$root" /usr/bin/env -i HOME=/root TORCH_CUDA_ARCH_LIST=9.0 CUDA_HOME=/opt/cuda13 \
    PATH=/opt/opforge/bin:/opt/cuda13/bin:/usr/bin:/bin \
    opforge build default --build-dir /tmp/native/build --dist-dir /tmp/native/dist -q
  umount "$root/proc"
fi

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
  if read -r _ nw nu ns < <(grep '^emulated_build ' "$work/times"); then
    echo "the whole default recipe natively in the arm64 root under QEMU (opforge aarch64, NVIDIA's aarch64 nvcc 13.0.88)"
    awk -v w="$nw" -v c="$(echo "$nu + $ns" | bc)" 'BEGIN { printf "  emulated build          %7.1f / %7.1f\n", w, c }'
    awk -v n="$nw" -v a="$aw" -v nc="$(echo "$nu + $ns" | bc)" -v ac="$(echo "$au + $as" | bc)" \
      'BEGIN { printf "  emulated / cross-build  %7.1fx wall, %5.1fx CPU (target >= 10)\n", n / a, nc / ac }'
  fi
  echo
} | tee -a "$out"
