#!/bin/bash
# kernels.aarch64: opforge's CPU ops cross-compiled for aarch64 from their op.toml (common sources
# plus [machine.aarch64], by bench/build_ops.py) and run under qemu-user, so every check runs on
# this x86-64 machine: cpu_adam's NEON path on a CPU without SVE (cortex-a72), its SVE path at
# two vector lengths (qemu's "max" CPU at 16 and 64 bytes: vector-length agnostic code must give
# the same results at both), OPFORGE_CPU_ADAM_SIMD lowering the level, and utils' flatten.
# aio is cross-compiled (it must build) but not run: libaio is not installed for aarch64.
# Prints "SKIP: ..." and exits 0 without the cross compiler or qemu (the test's
# SKIP_REGULAR_EXPRESSION). Timings under emulation say nothing about real CPUs: none is taken.
# Usage: kernels_aarch64.sh SOURCE_DIR WORK_DIR
set -euo pipefail
SRC=$1
WORK=$2
CXX=aarch64-linux-gnu-g++
QEMU=qemu-aarch64-static
SYSROOT=/usr/aarch64-linux-gnu

command -v "$CXX" >/dev/null || { echo "SKIP: no $CXX (Debian: apt-get install g++-aarch64-linux-gnu)"; exit 0; }
command -v "$QEMU" >/dev/null || { echo "SKIP: no $QEMU (Debian: apt-get install qemu-user-static)"; exit 0; }
[ -d "$SYSROOT/lib" ] || { echo "SKIP: no aarch64 C library in $SYSROOT (libc6-dev-arm64-cross)"; exit 0; }

rm -rf "$WORK"
mkdir -p "$WORK"
python3 "$SRC/bench/build_ops.py" --machine aarch64 --cxx "$CXX" "$WORK" cpu_adam utils aio >/dev/null
for lib in cpu_adam utils aio; do
  file -L "$WORK/libopforge_$lib.so" | grep -q "ARM aarch64" || { echo "FAIL: libopforge_$lib.so is not aarch64 code"; exit 1; }
done
"$CXX" -std=c++17 -O2 -Wall -Wextra -Werror -I"$SRC/src/kernels/cpu_adam" "$SRC/tests/kernels_aarch64_driver.cpp" \
  -o "$WORK/driver" -L"$WORK" -lopforge_cpu_adam -lopforge_utils -Wl,-rpath,"$WORK"

status=0
# run NAME CPU EXPECTED_BEST EXPECTED_NOW [VAR=VALUE...]
run() {
  local name=$1 cpu=$2 best=$3 now=$4
  shift 4
  echo "== $name (-cpu $cpu${*:+, $*})"
  if ! env "$@" "$QEMU" -L "$SYSROOT" -cpu "$cpu" "$WORK/driver" "$best" "$now"; then
    echo "FAIL: $name"
    status=1
  fi
}
run "NEON on a CPU without SVE" cortex-a72 neon neon
run "SVE, 128-bit vectors" max,sve-default-vector-length=16 sve sve
run "SVE, 512-bit vectors" max,sve-default-vector-length=64 sve sve
run "SVE CPU, OPFORGE_CPU_ADAM_SIMD=neon" max sve neon OPFORGE_CPU_ADAM_SIMD=neon
run "NEON CPU, OPFORGE_CPU_ADAM_SIMD=sve is not obeyed" cortex-a72 neon neon OPFORGE_CPU_ADAM_SIMD=sve
exit $status
