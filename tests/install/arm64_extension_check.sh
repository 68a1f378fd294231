#!/usr/bin/env bash
# arm64_extension_check.sh WHEEL_DIR: the torch CUDA extension cross-built for aarch64
# (e2e.cross_extension) imported with PyPI's aarch64 torch in the arm64 root under emulation
# (arm64/extension_steps.sh): no GPU there, so its CPU path computes. "SKIP: ..." where the root
# cannot be made here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/*_aarch64.whl | head -n 1)
[ -f "$wheel" ] || { echo "no aarch64 wheel in $1 (e2e.cross_extension makes it)"; exit 1; }
source "$here/make_root.sh"
use_root bookworm-arm64-torch
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/extension_steps.sh" "$wheel"
