#!/usr/bin/env bash
# arm64_torch_check.sh: PyPI's aarch64 torch in the arm64 root (make_root.sh bookworm-arm64-torch)
# imports there under emulation, without a GPU: the torch the aarch64 builds and wheels are checked
# against. "SKIP: ..." where the root or torch cannot be made here.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/make_root.sh"
use_root bookworm-arm64-torch
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/torch_steps.sh"
