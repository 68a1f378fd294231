#!/usr/bin/env bash
# arm64_ops_check.sh WHEEL_DIR: the default recipe's wheel cross-built for aarch64 (e2e.cross_aarch64)
# installed in the arm64 root with PyPI's aarch64 torch and used there under emulation through
# opforge_ops' Python package (arm64/ops_steps.sh). "SKIP: ..." where the root cannot be made here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/*_aarch64.whl | head -n 1)
[ -f "$wheel" ] || { echo "no aarch64 wheel in $1 (e2e.cross_aarch64 makes it)"; exit 1; }
source "$here/make_root.sh"
use_root bookworm-arm64-torch
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/ops_steps.sh" "$wheel"
