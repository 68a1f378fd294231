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
# A header: only the ops whose sources include it (depfiles) are rebuilt.
touch "$work/src/src/kernels/utils/parallel.h"
b > "$work/4.log" 2>&1 || { cat "$work/4.log"; fail "fourth build"; }
cat "$work/4.log"
steps=$(grep '^\[' "$work/4.log" || true)
grep -q "c++ cpu_adam/adam.cpp" <<<"$steps" || fail "cpu_adam/adam.cpp (includes parallel.h) was not rebuilt"
grep -q "c++ utils/flatten.cpp" <<<"$steps" || fail "utils/flatten.cpp (includes parallel.h) was not rebuilt"
if grep -qE "aio|overflow|adam_(scalar|avx)" <<<"$steps"; then fail "files not including the header were rebuilt: $steps"; fi
# Nothing changed again: the wheel from the same inputs is kept, not re-packed.
b > "$work/5.log" 2>&1 || { cat "$work/5.log"; fail "fifth build"; }
grep -q "kept as it is" "$work/5.log" || fail "the identical wheel was re-packed"
echo "PASS"
