#!/usr/bin/env bash
# build.sh SOURCE BUILD_DIR CC CXX TARGET: configures SOURCE with that compiler (warnings are
# errors) into BUILD_DIR, kept for the next run, and builds TARGET; then the built opforge must
# answer --version.
set -euo pipefail
src="$1" build="$2" cc="$3" cxx="$4" target="$5"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
fi
"$cxx" --version | head -1
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O0 -g0" -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
  -DOPFORGE_WERROR=ON "${launcher[@]}" >/dev/null
log="$build/build.log"
if ! cmake --build "$build" --target "$target" -j "$(nproc)" >"$log" 2>&1; then
  grep -E -A8 'error|FAILED' "$log" | head -80
  echo "build with $cxx failed; the whole log is $log"
  exit 1
fi
# -Werror covers opforge's own code; anything else the compiler warns about is shown too.
if grep -q 'warning:' "$log"; then
  grep -A4 'warning:' "$log" | head -40
  echo "the build with $cxx printed warnings"
  exit 1
fi
"$build/opforge" --version
echo "built $target with $cxx"
