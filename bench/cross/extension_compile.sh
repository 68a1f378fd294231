#!/usr/bin/env bash
# bench/cross/extension_compile.sh [OUT]: the host compile of a torch extension's C++ source
# (tests/fixtures/cuda_extension/csrc/scale.cpp: torch/extension.h, which is most of every torch
# extension's CPU time) for aarch64, three ways side by side, wall and CPU seconds:
#   x86_64    this machine's g++ against the build torch (OPFORGE_TORCH_VENV): the native baseline
#   cross     Debian's aarch64-linux-gnu-g++ here against PyPI's aarch64 torch 2.15.0 (the one a
#             cross command build fetches into the cache: OPFORGE_TARGET_TORCH, its torch/ folder)
#   emulated  the arm64 root's own g++ under qemu-user-static against the same aarch64 torch
#             installed in the root (/opt/torch215): what building natively under emulation costs
# Same flags for all three (torch's cpp_extension's, -O3, -g0). Ratios: cross / x86_64 (target <=
# 1.2) and emulated / cross (target >= 10). Needs the arm64 root with torch (make_root.sh
# bookworm-arm64-torch), as root. Appends to OUT (default bench/results/cross.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/bench/results/cross.txt}"
venv=${OPFORGE_TORCH_VENV:-$HOME/.cache/opforge/torch-venv}
target=${OPFORGE_TARGET_TORCH:-$HOME/.cache/opforge/toolkits/torch-aarch64-cp311-2.15.0/site/torch}
work=$(mktemp -d /tmp/opforge-bench-extcompile.XXXXXX)
trap 'rm -rf "$work"' EXIT
. "$repo/tests/install/make_root.sh"
use_root bookworm-arm64-torch
host_torch=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
root_torch=/opt/torch215/lib/python3.11/site-packages/torch
flags=(-O3 -g0 -std=c++20 -fPIC -DTORCH_EXTENSION_NAME=_C -DTORCH_API_INCLUDE_EXTENSION_H -D_GLIBCXX_USE_CXX11_ABI=1)
inc() { echo "-I$1/include -I$1/include/torch/csrc/api/include -I/usr/include/python3.11"; }
cp "$repo/tests/fixtures/cuda_extension/csrc/scale.cpp" "$work/scale.cpp"
mkdir -p "$ROOT/tmp/extcompile" && cp "$work/scale.cpp" "$ROOT/tmp/extcompile/"

timed() {  # timed LABEL CMD...
  local label=$1; shift
  /usr/bin/time -f "%e %U %S" -o "$work/time.$label" "$@"
  echo "$label $(cat "$work/time.$label")" >> "$work/times"
}
# shellcheck disable=SC2046
timed x86_64 g++ "${flags[@]}" $(inc "$host_torch") -c "$work/scale.cpp" -o "$work/x86.o"
# shellcheck disable=SC2046
timed cross aarch64-linux-gnu-g++ "${flags[@]}" $(inc "$target") -idirafter /usr/include -c "$work/scale.cpp" -o "$work/cross.o"
# shellcheck disable=SC2046
timed emulated chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin \
  g++ "${flags[@]}" $(inc "$root_torch") -c /tmp/extcompile/scale.cpp -o /tmp/extcompile/native.o
rm -rf "$ROOT/tmp/extcompile"
read -r _ xw xu xs < <(grep '^x86_64 ' "$work/times")
read -r _ cw cu cs < <(grep '^cross ' "$work/times")
read -r _ ew eu es < <(grep '^emulated ' "$work/times")
{
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$repo" rev-parse --short HEAD), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "one torch extension host compile (scale.cpp, torch/extension.h of torch 2.15.0, -O3 -g0); seconds (wall / CPU)"
  awk -v w="$xw" -v c="$(echo "$xu + $xs" | bc)" 'BEGIN { printf "  x86_64 g++ here         %7.1f / %7.1f\n", w, c }'
  awk -v w="$cw" -v c="$(echo "$cu + $cs" | bc)" 'BEGIN { printf "  aarch64 cross g++ here  %7.1f / %7.1f\n", w, c }'
  awk -v w="$ew" -v c="$(echo "$eu + $es" | bc)" 'BEGIN { printf "  native g++ under QEMU   %7.1f / %7.1f\n", w, c }'
  awk -v a="$cw" -v x="$xw" -v ac="$(echo "$cu + $cs" | bc)" -v xc="$(echo "$xu + $xs" | bc)" \
    'BEGIN { printf "  cross / x86_64          %7.2fx wall, %5.2fx CPU (target <= 1.2)\n", a / x, ac / xc }'
  awk -v e="$ew" -v c="$cw" -v ec="$(echo "$eu + $es" | bc)" -v cc="$(echo "$cu + $cs" | bc)" \
    'BEGIN { printf "  emulated / cross        %7.1fx wall, %5.1fx CPU (target >= 10)\n", e / c, ec / cc }'
  echo
} | tee -a "$out"
