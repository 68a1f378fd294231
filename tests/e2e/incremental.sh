#!/usr/bin/env bash
# A second build with nothing changed compiles and links nothing; touching one source rebuilds
# only its op.
set -euo pipefail
opforge=$1 src=$2 work=$3
. "$src/tests/e2e/lib.sh"
rm -rf "$work"; mkdir -p "$work"
copy_tree "$src" "$work/src"
export TORCH_CUDA_ARCH_LIST="9.0" OPFORGE_CACHE_DIR="$work/cache"
b() { "$opforge" build "$work/src/recipes/default.toml" --build-dir "$work/build" --dist-dir "$work/dist"; }
b > "$work/1.log" 2>&1 || { cat "$work/1.log"; fail "first build"; }
b > "$work/2.log" 2>&1 || { cat "$work/2.log"; fail "second build"; }
cat "$work/2.log"
grep -q '^\[' "$work/2.log" && fail "the no-change build ran steps"
grep -q "nothing to compile" "$work/2.log" || fail "no 'nothing to compile' line"
touch "$work/src/src/kernels/utils/flatten.cpp"
b > "$work/3.log" 2>&1 || { cat "$work/3.log"; fail "third build"; }
cat "$work/3.log"
steps=$(grep '^\[' "$work/3.log" || true)
grep -q "utils" <<<"$steps" || fail "utils was not rebuilt"
if grep -v utils <<<"$steps" | grep -q .; then fail "other ops were rebuilt: $steps"; fi
echo "PASS"
