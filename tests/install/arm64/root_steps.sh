# Runs inside the arm64 root (tests/install/arm64_root_check.sh), under emulation; in/neon_dot is
# the program cross-compiled on the host.
set -euo pipefail
cd /tmp/opforge-test
echo "== uname -m: $(uname -m)"
[ "$(uname -m)" = aarch64 ]
grep -q 'VERSION_ID="12"' /etc/os-release
machine=$(python3 -c 'import platform; print(platform.machine())')
echo "== python3 $(python3 -c 'import sys; print(sys.version.split()[0])'): platform.machine() = $machine"
[ "$machine" = aarch64 ]
echo "== in/neon_dot"
out=$(in/neon_dot)
echo "$out"
[ "$out" = "neon dot 816 asimd yes" ]
