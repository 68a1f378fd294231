#!/usr/bin/env bash
# arm64_native_build.sh DIST_DIR: opforge's aarch64 platform wheel (install.dist_aarch64) builds the
# default recipe inside the arm64 root, under emulation, with NVIDIA's aarch64 CUDA 13.0 wheels as
# its toolkit and the root's own g++ and ninja: a Grace node building for itself. The toolkit wheels
# are downloaded once into the roots' cache. "SKIP: ..." where the root cannot be made here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/opforge-*_aarch64.whl)
source "$here/make_root.sh"
use_root bookworm-arm64
wheels="$(dirname "$ROOT")/wheels/cuda-13.0-aarch64"
if [ ! -f "$wheels/.complete" ]; then
  rm -rf "$wheels.tmp" && mkdir -p "$wheels.tmp"
  # The releases of this machine's toolkit (its dist-info): the same CUDA 13.0 nvcc, for aarch64.
  python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_aarch64 \
    --platform manylinux_2_17_aarch64 -d "$wheels.tmp" nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
    nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
  touch "$wheels.tmp/.complete"
  rm -rf "$wheels" && mv "$wheels.tmp" "$wheels"
fi
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/native_build_steps.sh" "$wheel" "$wheels"/*.whl
