#!/usr/bin/env bash
# A scikit-build-core CUDA project (tests/fixtures/skbuild_cuda: CMAKE_CUDA_ARCHITECTURES
# "75;80;86" unless given) built through the command backend with [arch] list = "9.0" and
# [build] cache = "ccache", scikit-build-core 1.1.2 from .venv-tools (scripts/deps), no build
# isolation:
#   - only the plan's GPU code is in the wheel (CMAKE_ARGS' -DCMAKE_CUDA_ARCHITECTURES beats the
#     project's default);
#   - the recipe's toolkit is used though another nvcc is first on PATH (CUDACXX);
#   - scikit-build-core builds in the scratch tree's build/skbuild (SKBUILD_BUILD_DIR), not a new
#     temporary folder;
#   - the same project from a second folder: every compile a ccache hit, the same wheel bytes;
#     from a third with another cache folder (another scratch path): the same bytes, its
#     lib/pkgconfig/tinyskb.pc included (the install prefix, scikit-build-core's temporary wheel
#     staging folder, made the same every build in /tmp/opforge-py-<content hash>).
# usage: skbuild_cuda.sh OPFORGE_BINARY SOURCE_DIR WORK_DIR TOOLS_VENV
set -euo pipefail
opforge=$(realpath "$1") src=$2 work=$(realpath -m "$3") venv=$(realpath -m "$4")
. "$src/tests/e2e/lib.sh"
need_cuda130
command -v cmake >/dev/null && command -v ninja >/dev/null || fail "no cmake or ninja"
command -v ccache >/dev/null || fail "no ccache"
"$venv/bin/python" -c "import scikit_build_core" 2>/dev/null || {
  [ "${CI:-}" = "true" ] && fail "scikit-build-core is not in $venv: run scripts/deps"
  echo "SKIP: scikit-build-core is not in $venv: run scripts/deps"; exit 77; }
rm -rf "$work" && mkdir -p "$work/fake-bin"
export OPFORGE_CACHE_DIR="$work/cache" CCACHE_DIR="$work/ccache"
unset CUDA_HOME CUDA_PATH TORCH_CUDA_ARCH_LIST CUDAARCHS CUDACXX CMAKE_ARGS SKBUILD_BUILD_DIR
# Another nvcc first on PATH, which CMake would take without CUDACXX: it fails loudly.
printf '#!/bin/sh\necho "the nvcc first on PATH ran: $*" >&2\nexit 1\n' > "$work/fake-bin/nvcc"
chmod +x "$work/fake-bin/nvcc"
export PATH="$work/fake-bin:$PATH"

project() {  # project DIR: the fixture, its command run by the venv's Python
  cp -r "$src/tests/fixtures/skbuild_cuda" "$1"
  sed -i "s|^command = \[\"python3\"|command = [\"$venv/bin/python\"|" "$1/opforge.toml"
}
build() {  # build NAME: builds $work/NAME, log in $work/NAME.log
  (cd "$work/$1" && "$opforge" build opforge.toml) > "$work/$1.log" 2>&1 || { tail -40 "$work/$1.log"; fail "build $1"; }
}
sha() { sha256sum "$1" | cut -d' ' -f1; }

project "$work/a"
build a
wheel=$(only_wheel "$work/a/dist")
[ -n "$wheel" ] || fail "no wheel"
code=$("$opforge" inspect --json "$wheel" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(" ".join(sorted({i["name"] for f in j["files"] if "elf" in f for i in f["elf"]["fatbin"]})))')
[ "$code" = "sm_90" ] || fail "GPU code '$code', not sm_90"
grep -qx "GPU code: sm_90 (the project asked for the same)" "$work/a.log" || { grep -n "GPU code" "$work/a.log"; fail "GPU code line"; }
log=$work/a/build/opforge/command.log
grep -q "tinyskb: CUDA compiler $OPFORGE_CACHE_DIR/nvcc/.*/nvcc 13.0" "$log" || { grep -n "tinyskb:\|nvcc" "$log" | head; fail "CMake's CUDA compiler is not the recipe's toolkit through opforge's wrapper"; }
! grep -q "the nvcc first on PATH ran" "$log" || fail "the nvcc first on PATH ran"
prefix=$(python3 -c "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read(\"lib/pkgconfig/tinyskb.pc\").decode())" "$wheel" | sed -n 's/^prefix=//p')
[[ $prefix =~ ^/tmp/opforge-py-[0-9a-f]{16}/tmp[a-z0-9_]{8}/wheel/platlib$ ]] || fail "tinyskb.pc's prefix '$prefix' is not the stable staging folder"
grep -q "$OPFORGE_CACHE_DIR/trees/[^/]*/build/skbuild" "$log" || { grep -n "build" "$log" | head; fail "scikit-build-core did not build in the tree's build/skbuild"; }

# A second folder: the same scratch tree, so every compile hits ccache; the same bytes.
project "$work/b"
ccache -z >/dev/null
build b
stats=$(ccache --print-stats)
hits=$(echo "$stats" | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" {n += $2} END {print n + 0}')
misses=$(echo "$stats" | awk -F'\t' '$1 == "cache_miss" {print $2}')
[ "$hits" -ge 1 ] && [ "${misses:-0}" = 0 ] || { echo "$stats"; fail "second folder: $hits hits, ${misses:-?} misses (expected every compile to hit)"; }
[ "$(sha "$(only_wheel "$work/b/dist")")" = "$(sha "$wheel")" ] || fail "the wheel from the second folder differs"
# A third folder with its own cache folder: another scratch path, nvcc wrapper and build folder;
# the same bytes (the build folder is inside the tree that -ffile-prefix-map maps to '.').
project "$work/c"
OPFORGE_CACHE_DIR="$work/cache2" build c
[ "$(sha "$(only_wheel "$work/c/dist")")" = "$(sha "$wheel")" ] || fail "the wheel from another cache folder differs"
echo "OK: scikit-build-core: sm_90 only, the recipe's nvcc, build/skbuild in the tree, $hits ccache hits from a second folder, the same bytes"
