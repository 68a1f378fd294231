#!/usr/bin/env bash
# arm64_root_check.sh WORK: the arm64 root (tests/install/arm64_root.sh) is an aarch64 machine
# here: its python3 says aarch64, and a NEON program cross-compiled on this machine with Debian's
# aarch64-linux-gnu-g++ runs in it (the root's loader and libstdc++) and prints the known answer.
# What the aarch64 wheels' checks rely on. "SKIP: ..." where the root cannot be made or run.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$1"
source "$here/make_root.sh"
use_root bookworm-arm64
command -v aarch64-linux-gnu-g++ >/dev/null ||
  skip "aarch64-linux-gnu-g++ is not installed (apt-get install g++-aarch64-linux-gnu; scripts/deps installs it)"
mkdir -p "$work"
aarch64-linux-gnu-g++ -O2 -o "$work/neon_dot" "$here/arm64/neon_dot.cpp"
machine=$(readelf -h "$work/neon_dot" | sed -n 's/^ *Machine: *//p')
echo "neon_dot: $machine"
[ "$machine" = AArch64 ] || { echo "the cross-compiled program is for '$machine', not AArch64"; exit 1; }
IN_ROOT_TOOLKIT=0 "$here/in_root.sh" "$ROOT" "$here/arm64/root_steps.sh" "$work/neon_dot"
