#!/usr/bin/env bash
# bench/install/run.sh [OUT]: the two ways to a working opforge, side by side in one run.
#   wheel:  pip install of the platform wheel (dist/opforge-*.whl, from scripts/dist) into a fresh
#           venv in the Debian 11 root of the install tests, then `opforge doctor`: the time from
#           the start of pip to doctor's end, and doctor's own wall time;
#   source: what scripts/setup does up to a built opforge (scripts/deps, configure, build the
#           opforge target) in a fresh clone, without ccache.
# Also the wheel's size. Targets: wheel < 10 s, against about 4 minutes; size <= 15 MB.
set -euo pipefail
root_dir="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root_dir/bench/results/install.txt}"
wheel=$(ls "$root_dir"/dist/opforge-*.whl | head -1)
source "$root_dir/tests/install/root.sh"

steps=$(mktemp)
cat > "$steps" <<'STEPS'
set -euo pipefail
cd /tmp/opforge-test
t0=$(date +%s.%N)
python3 -m venv venv
venv/bin/pip install -q --no-index in/*.whl
t1=$(date +%s.%N)
venv/bin/opforge doctor > doctor.txt
t2=$(date +%s.%N)
python3 -c "import sys; a, b, c = map(float, sys.argv[1:]); print(f'venv+pip {b - a:.2f} doctor {c - b:.2f} total {c - a:.2f}')" "$t0" "$t1" "$t2"
STEPS
wheel_line=$("$root_dir/tests/install/in_root.sh" "$ROOT" "$steps" "$wheel" "$NINJA_WHEELS"/ninja-*.whl | tail -1)
rm -f "$steps"

clone=$(mktemp -d)
git clone -q --no-local "$root_dir" "$clone/opforge"
t0=$(date +%s.%N)
(
  cd "$clone/opforge"
  ./scripts/deps >/dev/null
  CCACHE_DISABLE=1 cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  CCACHE_DISABLE=1 cmake --build build --target opforge >/dev/null
)
t1=$(date +%s.%N)
rm -rf "$clone"
source_s=$(python3 -c "print(round($t1 - $t0, 1))")
size=$(stat -c %s "$wheel")

read -r _ pip_s _ doctor_s _ total_s <<<"$wheel_line"
{
  echo "# bench/install/run.sh — $(date -u +%Y-%m-%d), $(nproc) cores, one run, side by side"
  echo "wheel:  $(basename "$wheel")"
  echo "wheel size:                               $size bytes ($(python3 -c "print(round($size / 1e6, 2))") MB; target <= 15 MB)"
  echo "Debian 11 root: venv + pip install wheel: ${pip_s} s"
  echo "Debian 11 root: opforge doctor:           ${doctor_s} s"
  echo "Debian 11 root: pip install -> doctor:    ${total_s} s (target < 10 s)"
  echo "source: scripts/deps + configure + build opforge (fresh clone, no ccache): ${source_s} s"
  echo "ratio source / wheel:                     $(python3 -c "print(round($source_s / $total_s, 1))")x"
} | tee "$out"
