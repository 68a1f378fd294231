# Runs inside the arm64 root (tests/install/arm64_dist.sh), under emulation; in/ holds the wheel.
set -euo pipefail
cd /tmp/opforge-test
step() { echo "== $*"; }
step "pip install the aarch64 wheel (offline)"
python3 -m venv venv
venv/bin/pip install -q --no-index in/opforge-*_aarch64.whl
export PATH="/tmp/opforge-test/venv/bin:$PATH"
[ "$(command -v opforge)" = /tmp/opforge-test/venv/bin/opforge ]

step "opforge --version"
opforge --version | tee version.txt
grep -Eq '^opforge [0-9][^ ]* \(commit [0-9a-f]{40}\)$' version.txt

step "opforge doctor"
# No toolkit and no GPU here: doctor still reports (exit 0 or its "something is missing" exit 3).
rc=0
opforge doctor >doctor.txt 2>&1 || rc=$?
cat doctor.txt
[ "$rc" = 0 ] || [ "$rc" = 3 ] || { echo "opforge doctor exited $rc"; exit 1; }
# The node's line: Debian 12's glibc (in /lib/aarch64-linux-gnu), and no x86-64 level (under qemu,
# /proc/cpuinfo is the x86-64 host's).
node=$(grep -E '^node ' doctor.txt) || { echo "doctor printed no node line"; exit 1; }
case "$node" in *"glibc 2.36"*) ;; *) echo "doctor does not report the node's glibc 2.36: $node"; exit 1 ;; esac
case "$node" in *x86-64*) echo "doctor reports an x86-64 level on aarch64: $node"; exit 1 ;; esac
