#!/bin/bash
# The guides' seed command end to end: the DS_BUILD_* variables users already type select exactly the
# ops in the wheel.
#   TORCH_CUDA_ARCH_LIST="8.6" DS_BUILD_CPU_ADAM=1 DS_BUILD_UTILS=1 opforge build → cpu_adam, utils
#   … + DS_BUILD_AIO=1                                                        → + aio
#   DS_BUILD_OPS=1 DS_BUILD_AIO=0                                             → every bundled op but aio
# Each wheel's cpu_adam/utils are then loaded from the unpacked wheel and run once.
# usage: seed_command.sh OPFORGE_BINARY WORK_DIR
set -euo pipefail
OPFORGE=$(realpath "$1")
WORK=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(realpath "$WORK")

# Every DS_BUILD_* of the caller's environment would change the selection: start clean.
for v in $(env | grep -o '^DS_BUILD_[A-Z0-9_]*' || true); do unset "$v"; done

# Builds with the given environment into $WORK/<case>/dist; prints the op libraries in the wheel.
build_case() {
  local name=$1; shift
  local dir=$WORK/$name
  mkdir -p "$dir"
  cat > "$dir/recipe.toml" <<TOML
[package]
name = "opforge-ops"
version = "0.1.0"
local_version = "none"

[source]
path = "$ROOT"
ops_dir = "src/kernels"

[arch]
fallback = "8.6"

[build]
build_dir = "build"
dist_dir = "dist"
TOML
  if ! env "$@" TORCH_CUDA_ARCH_LIST=8.6 "$OPFORGE" build "$dir/recipe.toml" > "$dir/build.log" 2>&1; then
    echo "FAIL: $name: opforge build exited non-zero; log:" >&2
    tail -40 "$dir/build.log" >&2
    exit 1
  fi
  local wheels=("$dir"/dist/*.whl)
  [ ${#wheels[@]} -eq 1 ] || { echo "FAIL: $name: expected one wheel, got ${wheels[*]}" >&2; exit 1; }
  $PY - "${wheels[0]}" <<'PY'
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
print(' '.join(sorted(m.group(1) for n in names
                      if (m := re.fullmatch(r'opforge_ops/_lib/libopforge_(\w+)\.so', n)))))
PY
}

expect() {
  local name=$1 got=$2 want=$3
  if [ "$got" != "$want" ]; then
    echo "FAIL: $name: the wheel holds [$got], expected [$want]" >&2
    exit 1
  fi
  echo "ok: $name: [$got]"
}

got=$(build_case seed DS_BUILD_CPU_ADAM=1 DS_BUILD_UTILS=1)
expect seed "$got" "cpu_adam utils"

# The wheel works: unpack it and run both ops from it.
mkdir -p "$WORK/seed/site"
(cd "$WORK/seed/site" && $PY -m zipfile -e "$WORK"/seed/dist/*.whl .)
PYTHONPATH=$WORK/seed/site OPFORGE_OPS_LIB_DIR= $PY - <<'PY'
import numpy as np
from opforge_ops import cpu_adam, utils
p = np.ones(1000, np.float32); g = np.full(1000, 0.5, np.float32)
m = np.zeros_like(p); v = np.zeros_like(p)
cpu_adam.adam_step(p, g, m, v, step=1, lr=0.1)
assert np.allclose(p, 0.9), p[:4]
f = utils.flatten([np.arange(3.0), np.zeros(0), np.arange(2.0)])
assert f.tolist() == [0, 1, 2, 0, 1]
print('ok: seed wheel runs; cpu_adam SIMD level:', cpu_adam.simd_level())
PY

got=$(build_case seed_aio DS_BUILD_CPU_ADAM=1 DS_BUILD_UTILS=1 DS_BUILD_AIO=1)
expect seed_aio "$got" "aio cpu_adam utils"

all_but_aio=$(cd "$ROOT/src/kernels" && for d in */op.toml; do n=${d%/op.toml}; [ "$n" != aio ] && echo "$n"; done | sort | tr '\n' ' ' | sed 's/ $//')
got=$(build_case ops_no_aio DS_BUILD_OPS=1 DS_BUILD_AIO=0)
expect ops_no_aio "$got" "$all_but_aio"
