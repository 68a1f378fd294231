#!/usr/bin/env bash
# bench/cross/extension.sh OPFORGE [OUT]: a whole torch CUDA extension build for Grace (aarch64),
# one arch, three ways side by side in one run, wall and CPU seconds (user + system of everything
# each waited for). The extension is tests/fixtures/cuda_extension (tinyscale: one .cpp against
# torch/extension.h, one .cu kernel), `python setup.py bdist_wheel` through torch's cpp_extension,
# TORCH_CUDA_ARCH_LIST=9.0, torch 2.15.0, no compiler cache:
#   x86_64    `opforge build` for this machine (OPFORGE_TORCH_VENV's torch)
#   cross     the same recipe with `platform = "aarch64"`: x86-64 nvcc, Debian's aarch64 g++,
#             PyPI's aarch64 torch and NVIDIA's aarch64 runtime from opforge's cache
#   emulated  the same setup.py run natively inside the arm64 root under qemu-user-static
#             (cibuildwheel's way): the root's python with PyPI's aarch64 torch (/opt/torch215),
#             its own g++, and NVIDIA's aarch64 nvcc, crt, nvvm, runtime and CCCL wheels of the x86
#             toolkit's release as CUDA_HOME, so nvcc, cicc, ptxas and g++ all run emulated
# Ratios: cross / x86_64 (target <= 1.2) and emulated / cross (target >= 10). The aarch64 torch,
# runtime and toolkit are fetched before anything is timed. Needs the arm64 root with torch
# (tests/install/make_root.sh bookworm-arm64-torch), as root; network once (pip downloads).
# Appends to OUT (default bench/results/cross.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
opforge=$(realpath "$1")
out="${2:-$repo/bench/results/cross.txt}"
work=${OPFORGE_BENCH_WORK:-/tmp/opforge-bench-cross-extension}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
rm -rf "$work" && mkdir -p "$work"
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS

. "$here/common.sh"  # timed, aarch64_toolkit
fixture() {  # fixture DIR PLATFORM: the extension with a recipe for PLATFORM
  cp -r "$repo/tests/fixtures/cuda_extension" "$1"
  sed -e "/^\[build\]/a platform = \"$2\"" \
    -e "s#^command = .*#command = [\"$venv/bin/python\", \"setup.py\", \"bdist_wheel\"]#" \
    "$repo/tests/fixtures/cuda_extension/opforge.toml" > "$1/opforge.toml"
  printf '[cuda]\npython = "%s"\n' "$venv/bin/python" >> "$1/opforge.toml"
}

# Warm: opforge's cache gets the aarch64 torch and runtime (not timed).
fixture "$work/warm" aarch64
(cd "$work/warm" && "$opforge" build opforge.toml -q) > "$work/warm.log" 2>&1 || { tail -30 "$work/warm.log"; exit 1; }

for side in x86_64 aarch64; do
  fixture "$work/$side" "$side"
  timed "$side" sh -c "cd '$work/$side' && '$opforge' build opforge.toml > build.log 2>&1" ||
    { tail -40 "$work/$side/build.log"; exit 1; }
done
cross_whl=$(ls "$work"/aarch64/dist/*.whl)

# The emulated build, in the arm64 root: its files under /tmp/opforge-bench-ext, removed afterwards.
. "$repo/tests/install/make_root.sh"
use_root bookworm-arm64-torch
inroot=/tmp/opforge-bench-ext
stage="$ROOT$inroot"
trap 'rm -rf "$work/tk-wheels" "$stage"' EXIT
rm -rf "$stage" && mkdir -p "$stage/pylib"
aarch64_toolkit "$stage/cuda13" "$work/tk-wheels"
# setup.py's own needs (pure Python; the root's torch environment was made without pip).
python3 -m pip install -q --no-compile --target "$stage/pylib" "setuptools<80" wheel
cp -r "$repo/tests/fixtures/cuda_extension" "$stage/src"
rm -f "$stage/src/opforge.toml"
cat > "$stage/build.sh" <<STEPS
set -euo pipefail
cd $inroot/src
TIMEFORMAT='%R %U %S'
{ time python setup.py -q bdist_wheel > $inroot/build.log 2>&1; } 2> $inroot/time
STEPS
rc=0
unshare --mount --propagation private -- sh -c "mount -t proc proc '$ROOT/proc' && mount --rbind /dev '$ROOT/dev' &&
  chroot '$ROOT' /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=$inroot/cuda13/bin:/opt/torch215/bin:/usr/bin:/bin \
    CUDA_HOME=$inroot/cuda13 TORCH_CUDA_ARCH_LIST=9.0 MAX_JOBS=$(nproc) PYTHONPATH=$inroot/pylib \
    /bin/bash $inroot/build.sh" || rc=$?
[ "$rc" = 0 ] || { tail -40 "$stage/build.log"; exit 1; }
echo "emulated $(cat "$stage/time")" >> "$work/times"
native_whl="$work/$(basename "$(ls "$stage"/src/dist/*.whl)")"
cp "$stage"/src/dist/*.whl "$native_whl"  # kept: the stage goes with the trap
so_of() { mkdir -p "$work/unpacked.$2" && (cd "$work/unpacked.$2" && unzip -qo "$1") &&
  find "$work/unpacked.$2" -name '_C*.so' | head -1; }
cross_so=$(so_of "$cross_whl" cross) native_so=$(so_of "$native_whl" native)
machines="$(readelf -h "$cross_so" | sed -n 's/^ *Machine: *//p') / $(readelf -h "$native_so" | sed -n 's/^ *Machine: *//p')"
sm() { "$opforge" inspect "$1" | sed -n 's/^ *gpu code: //p' | head -1; }  # the wheel's GPU code

read -r _ xw xu xs < <(grep '^x86_64 ' "$work/times")
read -r _ aw au as < <(grep '^aarch64 ' "$work/times")
read -r _ ew eu es < <(grep '^emulated ' "$work/times")
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "torch extension tinyscale (setup.py: scale.cpp + scale_kernel.cu, torch 2.15.0), TORCH_CUDA_ARCH_LIST=9.0, no compiler cache; seconds (wall / CPU = user+sys)"
  awk -v w="$xw" -v c="$(echo "$xu + $xs" | bc)" 'BEGIN { printf "  x86_64 build            %7.1f / %7.1f\n", w, c }'
  awk -v w="$aw" -v c="$(echo "$au + $as" | bc)" 'BEGIN { printf "  aarch64 cross-build     %7.1f / %7.1f\n", w, c }'
  awk -v w="$ew" -v c="$(echo "$eu + $es" | bc)" 'BEGIN { printf "  emulated native build   %7.1f / %7.1f\n", w, c }'
  awk -v a="$aw" -v x="$xw" -v ac="$(echo "$au + $as" | bc)" -v xc="$(echo "$xu + $xs" | bc)" \
    'BEGIN { printf "  cross / x86_64          %7.2fx wall, %5.2fx CPU (target <= 1.2)\n", a / x, ac / xc }'
  awk -v e="$ew" -v c="$aw" -v ec="$(echo "$eu + $es" | bc)" -v cc="$(echo "$au + $as" | bc)" \
    'BEGIN { printf "  emulated / cross        %7.1fx wall, %5.1fx CPU (target >= 10)\n", e / c, ec / cc }'
  echo "  extension machine (cross / emulated): $machines; GPU code: $(sm "$cross_whl") / $(sm "$native_whl")"
  echo
} | tee -a "$out"
