#!/usr/bin/env bash
# arm64_dist.sh DIST_DIR: the aarch64 platform wheel (install.dist_aarch64) on Debian 12 arm64, as
# on a Grace node, under emulation: pip installs it into a venv, `opforge --version` and
# `opforge doctor` run (no GPU and no toolkit there: doctor says so and still reports the node).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wheel=$(ls "$1"/opforge-*_aarch64.whl)
source "$here/make_root.sh"
use_root bookworm-arm64
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/dist_steps.sh" "$wheel"
