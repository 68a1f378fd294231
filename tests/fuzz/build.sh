#!/usr/bin/env bash
# Configures and builds the fuzzers: build.sh SOURCE_DIR BUILD_DIR CC CXX.
set -euo pipefail
src=$1 build=$2 cc=$3 cxx=$4
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz build: $cxx not found; scripts/deps installs clang-19 and libclang-rt-19-dev" >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/build.ninja" ]; then
  # A unity build: 32 .cpp files to one compile (the heavy headers read once per 32).
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_UNITY_BUILD=ON \
    "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j "${OPFORGE_FUZZ_JOBS:-2}"
