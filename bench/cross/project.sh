#!/usr/bin/env bash
# bench/cross/project.sh OPFORGE [OUT]: a real setup.py CUDA project built for Grace (aarch64) on
# this x86-64 machine: causal-conv1d 1.7.0 (PyPI's sdist), one arch (TORCH_CUDA_ARCH_LIST=9.0), with
# torch 2.15.0 (OPFORGE_TORCH_VENV, scripts/torch-venv), no compiler cache, side by side in one run:
#   x86_64     `opforge build` for this machine
#   aarch64 a  `[build] platform = "aarch64"` from one folder
#   aarch64 b  the same from a second folder: the wheels must be the same bytes
# Ratio: aarch64 a / x86_64, wall and CPU (target <= 1.2). Then the aarch64 wheel's extension is
# checked: AArch64 code, and imported with PyPI's aarch64 torch 2.15.0 in the arm64 root under
# emulation (tests/install/make_root.sh bookworm-arm64-torch), its functions there (no GPU: the
# kernels cannot run; causal_conv1d's own Python reference does, on the CPU, beside it).
# The aarch64 torch and CUDA runtime are fetched before anything is timed. Appends to OUT
# (default bench/results/cross.txt). As root (chroot).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
opforge=$(realpath "$1")
out="${2:-$repo/bench/results/cross.txt}"
work=${OPFORGE_BENCH_WORK:-/tmp/opforge-bench-cross-project}
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
rm -rf "$work" && mkdir -p "$work"
export OPFORGE_CACHE_DIR="$work/cache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST MAX_JOBS
sdist=$("$repo/tests/e2e/fetch_sdist.sh" causal-conv1d 1.7.0)

. "$here/common.sh"  # timed, aarch64_toolkit, causal_conv1d_recipe, warm_aarch64_cache

# Fetch the aarch64 torch and runtime first: a cross-build of the small test extension.
warm_aarch64_cache

for side in x86_64:x86 aarch64:a aarch64:b; do
  platform=${side%%:*} dir=$work/${side#*:}
  mkdir -p "$dir" && tar -xzf "$sdist" -C "$dir" && causal_conv1d_recipe "$dir/causal-conv1d.toml" "$platform" "$venv"
  timed "${side#*:}" sh -c "cd '$dir' && '$opforge' build causal-conv1d.toml > build.log 2>&1" ||
    { tail -40 "$dir/build.log"; exit 1; }
done
a=$(ls "$work"/a/dist/*.whl) b=$(ls "$work"/b/dist/*.whl)
same=no
[ "$(basename "$a")" = "$(basename "$b")" ] && cmp -s "$a" "$b" && same=yes
mkdir -p "$work/unpacked" && (cd "$work/unpacked" && unzip -q "$a")
so=$(find "$work/unpacked" -name 'causal_conv1d_cuda*.so')
machine=$(readelf -h "$so" | sed -n 's/^ *Machine: *//p')

# In the arm64 root, under emulation: the extension imports with the aarch64 torch.
. "$repo/tests/install/make_root.sh"
use_root bookworm-arm64-torch
cat > "$work/steps.sh" <<'STEPS'
set -euo pipefail
cd /tmp/opforge-test && mkdir site && /opt/torch215/bin/python -m zipfile -e in/*.whl site
PYTHONPATH=site /opt/torch215/bin/python - <<'PY'
import platform, torch
import causal_conv1d_cuda
from causal_conv1d.causal_conv1d_interface import causal_conv1d_ref
assert platform.machine() == "aarch64"
names = sorted(n for n in dir(causal_conv1d_cuda) if not n.startswith("_"))
x, w = torch.arange(8.0).reshape(1, 2, 4), torch.ones(2, 3)
print("imported:", causal_conv1d_cuda.__file__.rsplit("/", 1)[-1], "functions:", " ".join(names),
      "| reference on the CPU:", causal_conv1d_ref(x, w).flatten().tolist())
PY
STEPS
imported=$(IN_ROOT_TOOLKIT=0 "$repo/tests/install/in_root.sh" "$ROOT" "$work/steps.sh" "$a" 2>&1 | grep '^imported:' || true)

read -r _ xw xu xs < <(grep '^x86 ' "$work/times")
read -r _ aw au as < <(grep '^a ' "$work/times")
read -r _ bw bu bs < <(grep '^b ' "$work/times")
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "causal-conv1d 1.7.0 (setup.py, torch 2.15.0), TORCH_CUDA_ARCH_LIST=9.0, no compiler cache; seconds (wall / CPU = user+sys)"
  awk -v w="$xw" -v c="$(echo "$xu + $xs" | bc)" 'BEGIN { printf "  x86_64 build            %7.1f / %7.1f\n", w, c }'
  awk -v w="$aw" -v c="$(echo "$au + $as" | bc)" 'BEGIN { printf "  aarch64 cross-build a   %7.1f / %7.1f\n", w, c }'
  awk -v w="$bw" -v c="$(echo "$bu + $bs" | bc)" 'BEGIN { printf "  aarch64 cross-build b   %7.1f / %7.1f\n", w, c }'
  awk -v a="$aw" -v x="$xw" -v ac="$(echo "$au + $as" | bc)" -v xc="$(echo "$xu + $xs" | bc)" \
    'BEGIN { printf "  cross / x86_64          %7.2fx wall, %5.2fx CPU (target <= 1.2)\n", a / x, ac / xc }'
  echo "  wheel: $(basename "$a"): extension $machine; a and b the same bytes: $same"
  echo "  arm64 root under QEMU, aarch64 torch 2.15.0: ${imported:-NOT IMPORTED}"
  echo
} | tee -a "$out"
[ "$same" = yes ] && [ "$machine" = AArch64 ] && [ -n "$imported" ]
